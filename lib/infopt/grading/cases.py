"""Hidden test cases a student can act on: a grading seed that is reported, the failing input shown small, and
plain words when the function changed its input or raised on a valid one.

    rng = grading_rng()                        # seeded from INFOPT_GRADING_SEED, else fresh; the seed is kept
    with case("random DAG #3", show=lambda: graph_text):
        out = call_student(fold_constants, g, name="fold_constants", fingerprint=lambda g: g.to_text())

A GradingError raised inside `case` comes out as "hidden test 'random DAG #3' failed (grading seed 1234)", then the
original message (the reason comes first, so no cap on what is shown can push it out), then the input when `show`
is given (cut at SHOW_CAP characters).
"""
from __future__ import annotations

import os
import pickle
import secrets
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import numpy as np

from .errors import GradingError, HarnessError

SEED_ENV = "INFOPT_GRADING_SEED"
SHOW_CAP = 1200   # characters of a failing input shown to the student
_seed: int | None = None


def grading_seed() -> int:
    """The seed of this grading run: INFOPT_GRADING_SEED when set (to reproduce a run), else drawn once."""
    global _seed
    env = os.environ.get(SEED_ENV)
    if env is not None:
        try:
            return int(env)
        except ValueError:
            raise HarnessError(f"{SEED_ENV}={env!r} is not an integer") from None
    if _seed is None:
        _seed = secrets.randbits(32)
    return _seed


def grading_rng(stream: int = 0) -> np.random.Generator:
    """A generator for hidden-test inputs: fresh at every grading, the same for the same seed and `stream`."""
    return np.random.default_rng([grading_seed(), int(stream)])


@contextmanager
def case(label: str, show: Any = None, hidden: bool = True) -> Iterator[None]:
    """Label one test case: a GradingError inside is re-raised naming the case, the seed and the input.

    ``show`` is the input to print, or a function of no arguments that returns it (printed only on failure)."""
    try:
        yield
    except GradingError as err:
        kind = "hidden test" if hidden else "test"
        head = f"{kind} {label!r} failed" + (f" (grading seed {grading_seed()})" if hidden else "")
        shown = ""
        if show is not None:
            try:
                text = str(show() if callable(show) else show)
            except Exception as exc:  # noqa: BLE001 (showing the input must never hide the real failure)
                text = f"<could not print the input: {type(exc).__name__}: {exc}>"
            shown = "\n  input:\n    " + (text if len(text) <= SHOW_CAP else text[:SHOW_CAP] + " …").replace(
                "\n", "\n    ")
        raise type(err)(f"{head}\n  {err}{shown}") from None


def _fingerprint(value: Any) -> bytes:
    """Bytes that change when `value` changes: array bytes, else its pickle (objects without one: their repr)."""
    if isinstance(value, np.ndarray):
        return value.dtype.str.encode() + str(value.shape).encode() + value.tobytes()
    try:
        return pickle.dumps(value, protocol=4)
    except Exception:  # noqa: BLE001 (unpicklable: fall back to the text form)
        return repr(value).encode()


def call_student(fn: Callable[..., Any], *args: Any, name: str | None = None,
                 fingerprint: Callable[[Any], Any] | None = None, **kwargs: Any) -> Any:
    """Call the student's `fn`; if it raises on this valid input, or changes an argument, say so plainly."""
    if not callable(fn):
        raise GradingError(f"{name or 'the exercise'} must be a function, got {type(fn).__name__}")
    label = name or getattr(fn, "__name__", "your function")
    fp = fingerprint or _fingerprint
    before = [fp(a) for a in args]
    try:
        out = fn(*args, **kwargs)
    except (GradingError, HarnessError):
        raise
    except Exception as err:
        raise GradingError(f"{label} raised {type(err).__name__} on a valid input: {err}") from err
    for i, (arg, was) in enumerate(zip(args, before)):
        if fp(arg) != was:
            raise GradingError(f"{label} changed its input (argument {i + 1}, a {type(arg).__name__}): work on a "
                               "copy and return a new value; the caller's object must stay as it was")
    return out
