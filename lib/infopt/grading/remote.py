"""The one call through which a test reaches the student's code when it is graded across the process boundary.

In the student's notebook a test calls the student's function directly. At grading, the test runs in the grader's
judge process, where the exercise's names are `StudentFunction`s: calling one sends the arguments to the student's
kernel (`infopt.grading.wire`: plain data and the library's own objects, never a pickle), where `serve` calls the
student's function and sends back the result, the arguments as the call left them (a mutation shows in the
judge's own objects), or the error as its type's name and a capped message. The judge holds the hidden tests, their
inputs, expected values, references and comparisons; the kernel holds none of them.

    judge:   topo_order = StudentFunction(channel, "topo_order")     # what the test cell's name means at grading
    kernel:  serve("/run/judge.sock", globals())                       # the cell the grader runs in its place
"""
from __future__ import annotations

import contextlib
import importlib
import socket
import sys
import traceback
from typing import Any, Callable

from . import guards as open_guards
from . import wire
from .errors import GradingError
from .forbid import bound_cells, forbid


class KernelGone(GradingError):
    """The student's kernel stopped answering while a test called it (it died, exited, or stopped serving)."""


class Channel:
    """The judge's end of one test's connection to the student's kernel."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.calls = 0

    def call(self, name: str, args: tuple, kwargs: dict, forbid: dict | None = None, via: str | None = None) -> Any:
        """Call `name` in the kernel (or the library function `via` with it as the first argument); return the
        result with the caller's own objects updated in place. Guards the judge has up (`forbid`) go up there too."""
        encoder = wire.Encoder()
        guards = [g for g in [forbid, *open_guards.OPEN] if g]
        try:
            tree = {"op": "call", "name": name, "call": encoder.encode((tuple(args), dict(kwargs)), "arguments"),
                    "forbid": guards, "via": via}
            message = wire.dump(tree, encoder.blobs)
        except wire.WireError as err:  # the test's own argument cannot cross: a harness bug, not the student's
            from .errors import HarnessError
            raise HarnessError(f"the test's arguments to {name} cannot cross to the kernel: {err}") from None
        self.calls += 1
        try:
            self.sock.sendall(message)
            reply, blobs = wire.receive(self.sock)
        except (EOFError, OSError) as err:
            raise KernelGone(f"your kernel stopped answering the grader while {name} ran (it died, exited or "
                             f"stopped serving calls: {type(err).__name__})") from None
        except wire.WireError as err:
            raise GradingError(f"{name}: the kernel's reply could not be read ({err})") from None
        if not isinstance(reply, dict):
            raise GradingError(f"{name}: the kernel's reply could not be read (not a message)")
        if "error" in reply:
            raise wire.decode_error(reply["error"])
        if "refused" in reply:
            raise GradingError(f"{name} returned a value the grader cannot check: {str(reply['refused'])[:500]}")
        try:
            result, _args, _kwargs = wire.Decoder(blobs, table=encoder.table).decode(reply.get("ok"))
        except wire.WireError as err:
            raise GradingError(f"{name}: {err}" if "in place" in str(err) else
                               f"{name}: the kernel's reply could not be read ({err})") from None
        except (TypeError, ValueError) as err:
            raise GradingError(f"{name}: the kernel's reply could not be read ({err})") from None
        return result

    def done(self) -> None:
        """Tell the kernel the test is over (its serving cell returns)."""
        try:
            wire.send(self.sock, {"op": "done"})
        except OSError:
            pass


class StudentFunction:
    """What an exercise's name means in the judge: a call crosses to the student's function in the kernel."""

    __infopt_remote__ = True   # how `forbidding` knows it (without importing this module)

    def __init__(self, channel: Channel, name: str, forbid: dict | None = None) -> None:
        self._channel, self._forbid = channel, forbid
        self.__name__ = self.__qualname__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._channel.call(self.__name__, args, kwargs, self._forbid)

    def via(self, target: str, *args: Any, **kwargs: Any) -> Any:
        """`target(<this function>, *args, **kwargs)` run in the kernel: a library function that must run where the
        student's code is (the Triton tracer: `infopt.kernels.trace:run_traced`)."""
        return self._channel.call(self.__name__, args, kwargs, self._forbid, via=target)

    def forbidding(self, targets: tuple[str, ...], exercise: str, why: str = "") -> "StudentFunction":
        """The same function, called in the kernel under `forbid(*targets)` (see infopt.grading.forbid)."""
        return StudentFunction(self._channel, self.__name__,
                               {"targets": list(targets), "exercise": exercise, "why": why})

    def __repr__(self) -> str:
        return f"<your function {self.__name__}, in your kernel>"


# ----- the kernel's side -----------------------------------------------------------------------------------------
def serve(path: str, namespace: dict) -> int:
    """Connect to the judge at `path` and answer its calls on the functions of `namespace` until it is done.

    Returns the number of calls answered. Runs in the student's kernel: nothing here is secret."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    return serve_on(sock, namespace)


def serve_on(sock: socket.socket, namespace: dict) -> int:
    """`serve` on a connected socket (closed at the end): answer calls until the judge is done."""
    answered = 0
    try:
        while True:
            try:
                tree, blobs = wire.receive(sock)
            except EOFError:
                break
            if not isinstance(tree, dict) or tree.get("op") != "call":
                break
            reply, reply_blobs = _answer(tree, blobs, namespace)
            try:
                wire.send(sock, reply, reply_blobs)
            except wire.WireError as err:
                wire.send(sock, {"refused": str(err)})
            answered += 1
    finally:
        sock.close()
    return answered


def _answer(tree: dict, blobs: list[bytes], namespace: dict) -> tuple[dict, list[bytes]]:
    name = str(tree.get("name", ""))
    fn = namespace.get(name)
    if not callable(fn):
        err = NameError(f"name {name!r} is not defined as a function in your notebook: run the cell that defines it"
                        if fn is None else f"{name} must be a function, got {type(fn).__name__}")
        return {"error": wire.encode_error(err)}, []
    decoder = wire.Decoder(blobs)
    try:
        args, kwargs = decoder.decode(tree.get("call"))
    except (wire.WireError, TypeError, ValueError) as err:
        return {"error": wire.encode_error(wire.WireError(f"the grader's call could not be read: {err}"))}, []
    before = [wire.digest(obj) for obj in decoder.table]   # what the arguments held: send back only changes
    via = tree.get("via")
    try:
        target = _library_function(via) if via else None
    except (ValueError, ImportError, AttributeError) as err:
        return {"error": wire.encode_error(wire.WireError(f"the grader's call could not be read: {err}"))}, []
    guards = [g for g in (tree.get("forbid") or []) if isinstance(g, dict) and g.get("targets")]
    try:
        with contextlib.ExitStack() as stack:
            for g in guards:
                stack.enter_context(forbid(*[str(t) for t in g["targets"]], exercise=str(g.get("exercise", "")),
                                           why=str(g.get("why", "")), namespaces=_namespaces(fn, namespace),
                                           closures=bound_cells(fn)))
            out = target(fn, *args, **kwargs) if target else fn(*args, **kwargs)
    except (Exception, SystemExit) as err:  # noqa: BLE001 (the student's error travels as data)
        return {"error": wire.encode_error(err, _own_frames(err))}, []
    known = {id(obj): i for i, obj in enumerate(decoder.table) if obj is not None}
    encoder = wire.Encoder(known=known, changed=lambda obj: wire.digest(obj) != before[known[id(obj)]])
    try:
        return {"ok": encoder.encode((out, args, kwargs), "your result")}, encoder.blobs
    except wire.WireError as err:
        return {"refused": str(err)}, []


def _library_function(target: str) -> Callable[..., Any]:
    """The library function "infopt.module:attr" (only the library's: the grader never names another)."""
    module_name, sep, attr = str(target).partition(":")
    if not sep or not (module_name == "infopt" or module_name.startswith("infopt.")):
        raise ValueError(f"{target!r} is not a function of the library")
    fn = getattr(importlib.import_module(module_name), attr)
    if not callable(fn):
        raise ValueError(f"{target!r} is not a function")
    return fn


def _namespaces(fn: Any, namespace: dict) -> tuple[dict, ...]:
    found = [namespace]
    if isinstance(getattr(fn, "__globals__", None), dict) and fn.__globals__ is not namespace:
        found.append(fn.__globals__)
    return tuple(found)


def _own_frames(err: BaseException) -> list[list]:
    """The frames of the student's own code in the error's traceback: [file, line, function, text]."""
    frames = []
    for frame in traceback.extract_tb(err.__traceback__):
        name = frame.filename
        if "site-packages" in name or "/infopt/" in name or name.startswith(sys.prefix) or name == __file__:
            continue
        frames.append([name[-200:], int(frame.lineno or 0), str(frame.name)[:100], str(frame.line or "")[:300]])
    return frames[-12:]


def is_remote(fn: Callable[..., Any]) -> bool:
    return isinstance(fn, StudentFunction)
