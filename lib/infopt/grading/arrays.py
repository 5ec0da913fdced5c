"""check_array / check_close: compare a student's array or number to a trusted expected one, in a fixed order."""
from __future__ import annotations

import math

import numpy as np

from .errors import GradingError, HarnessError
from .format import fmt_index, short, type_name

MAX_LISTED = 5          # differing positions listed in a message
MASK_MAX_ROWS = 16      # a 1-D/2-D difference mask is drawn when the array is at most this big
MASK_MAX_COLS = 48


def _check_tolerances(rtol: float, atol: float) -> None:
    """Reject tolerances that make no sense (a harness bug)."""
    for label, tol in (("rtol", rtol), ("atol", atol)):
        if type(tol) not in (int, float) or not math.isfinite(tol) or tol < 0:
            raise HarnessError(f"{label} must be a finite number >= 0, got {tol!r}")


def check_array(actual: object, expected: np.ndarray, rtol: float = 1e-5, atol: float = 1e-6,
                name: str = "result", *, kind: type = np.ndarray, check_dtype: bool = True,
                hint: str = "") -> None:
    """Check type (exactly `kind`), shape, dtype, then values (|a-e| <= atol + rtol*|e|, NaN == NaN) in that order.

    Values are compared on float64 (or complex128 / exact int) copies made here, never with the student's
    __eq__. Raises GradingError naming what differs; HarnessError if `expected` itself is unusable.
    """
    _check_tolerances(rtol, atol)
    if type(expected) is not np.ndarray:
        raise HarnessError(f"check_array needs a numpy.ndarray as expected value, got {type_name(expected)}")
    if expected.dtype.kind not in "biufc":
        raise HarnessError(f"check_array compares numeric arrays; expected has dtype {expected.dtype} (use check_equal)")
    tail = f"\n  hint: {hint}" if hint else ""
    if type(actual) is not kind:
        raise GradingError(f"{name}: expected a {type_name(expected) if kind is np.ndarray else kind.__qualname__}"
                           f" (shape {expected.shape}, dtype {expected.dtype}), got {type_name(actual)}: "
                           f"{short(actual)}{tail}")
    if kind is np.ndarray:
        got = actual
    else:  # a declared type (e.g. torch.Tensor) that converts itself; trusted because its type is exact
        try:
            got = np.asarray(actual)
        except Exception as err:
            raise GradingError(f"{name}: could not read your {kind.__name__} as numbers ({type(err).__name__}: "
                               f"{str(err)[:200]}){tail}") from None
    if type(got) is not np.ndarray:
        raise HarnessError(f"np.asarray({kind.__qualname__}) did not give an ndarray")
    if got.shape != expected.shape:
        raise GradingError(f"{name}: wrong shape: expected {expected.shape}, got {got.shape}{tail}")
    if check_dtype and got.dtype != expected.dtype:
        raise GradingError(f"{name}: wrong dtype: expected {expected.dtype}, got {got.dtype} "
                           f"(shape {got.shape} is right){tail}")
    if got.dtype.kind not in "biufc":
        raise GradingError(f"{name}: expected numbers, got an array of dtype {got.dtype}{tail}")
    bad, abs_err = _mismatch(got, expected, rtol, atol)
    n_bad = int(bad.sum())
    if n_bad:
        raise GradingError(_describe(name, got, expected, bad, abs_err, rtol, atol) + tail)


def _mismatch(got: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> tuple[np.ndarray, np.ndarray]:
    """Boolean mask of positions out of tolerance and the absolute error, on our own copies."""
    exact = got.dtype.kind in "biu" and expected.dtype.kind in "biu"
    if exact:
        g = np.array(got, dtype=np.int64 if got.dtype.kind != "u" else np.uint64, copy=True)
        e = np.array(expected, dtype=g.dtype, copy=True)
        bad = g != e if (rtol == 0 and atol == 0) else ~np.isclose(g.astype(np.float64), e.astype(np.float64),
                                                                   rtol=rtol, atol=atol)
        with np.errstate(all="ignore"):
            err = np.abs(g.astype(np.float64) - e.astype(np.float64))
        return np.asarray(bad, dtype=bool), err
    ctype = np.complex128 if "c" in (got.dtype.kind, expected.dtype.kind) else np.float64
    g = np.array(got, dtype=ctype, copy=True)
    e = np.array(expected, dtype=ctype, copy=True)
    with np.errstate(all="ignore"):
        close = np.isclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
        err = np.abs(g - e)
    err = np.where(np.isnan(err) & close, 0.0, err)
    return ~close, err


def _describe(name, got, expected, bad, abs_err, rtol, atol) -> str:
    """The Triton-Puzzles-style message: how many differ, the first few (index, expected, got), max error, a mask."""
    n_bad, total = int(bad.sum()), bad.size
    lines = [f"{name}: values differ at {n_bad} of {total} positions (tolerance |got-expected| <= "
             f"{atol:g} + {rtol:g}*|expected|)"]
    if got.ndim == 0:
        lines.append(f"  expected {expected.item()!r}, got {got.item()!r}")
    else:
        lines.append("  first differences (index: expected vs got):")
        for idx in np.argwhere(bad)[:MAX_LISTED]:
            t = tuple(idx)
            lines.append(f"    {fmt_index(t)}: {expected[t].item()!r} vs {got[t].item()!r}")
    errs = np.where(bad, abs_err, -1.0)
    worst = np.unravel_index(int(np.nanargmax(np.nan_to_num(errs, nan=np.inf))), bad.shape) if got.ndim else ()
    lines.append(f"  max abs error {float(abs_err[worst]) if got.ndim else float(abs_err):.3g}"
                 + (f" at {fmt_index(worst)}" if got.ndim else ""))
    mask = _mask(bad)
    if mask:
        lines.append("  where they differ (x = wrong, . = right):")
        lines.extend("    " + row for row in mask)
    return "\n".join(lines)


def _mask(bad: np.ndarray) -> list[str]:
    """A small text picture of the mismatch mask for 1-D and 2-D arrays (empty when too big)."""
    m = bad.reshape(1, -1) if bad.ndim == 1 else bad
    if m.ndim != 2 or m.shape[0] > MASK_MAX_ROWS or m.shape[1] > MASK_MAX_COLS:
        return []
    return ["".join("x" if v else "." for v in row) for row in m]


def check_close(actual: object, expected: float, rtol: float = 1e-5, atol: float = 1e-6,
                name: str = "result", hint: str = "") -> None:
    """Check a scalar float: `actual` must be a Python float/int or numpy floating/integer scalar, close to expected."""
    _check_tolerances(rtol, atol)
    if type(expected) not in (float, int) and not isinstance(expected, (np.floating, np.integer)):
        raise HarnessError(f"check_close needs a real number as expected value, got {type_name(expected)}")
    tail = f"\n  hint: {hint}" if hint else ""
    ok_types = (float, int)
    if not (type(actual) in ok_types or (isinstance(actual, (np.floating, np.integer))
                                         and type(actual).__module__ == "numpy")):
        raise GradingError(f"{name}: expected a number (float), got {type_name(actual)}: {short(actual)}{tail}")
    a, e = float(actual), float(expected)
    if math.isnan(a) and math.isnan(e):
        return
    if not (abs(a - e) <= atol + rtol * abs(e)) and a != e:
        raise GradingError(f"{name}: expected {e!r}, got {a!r} (abs error {abs(a - e):.3g}; tolerance "
                           f"{atol:g} + {rtol:g}*|expected|){tail}")
