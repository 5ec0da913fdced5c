"""check_equal: structural comparison with exact type checks, so a rigged __eq__ or a subclass never passes."""
from __future__ import annotations

import dataclasses
import enum
import math

import numpy as np

from .arrays import check_array
from .errors import GradingError, HarnessError
from .format import short, type_name

_SCALARS = (type(None), bool, int, str, bytes)
_FLOATS = (float, complex)
_SEQUENCES = (list, tuple)
_SETS = (set, frozenset)


def check_equal(actual: object, expected: object, name: str = "result", *, rtol: float = 0.0,
                atol: float = 0.0, hint: str = "") -> None:
    """Check that actual equals expected: same exact types all the way down, then same values.

    Handles None/bool/int/str/bytes, float/complex (exact unless rtol/atol), list/tuple (incl. namedtuples),
    dict, set/frozenset, numpy arrays and scalars, enums and dataclasses. Never calls the student's __eq__.
    """
    try:
        _equal(actual, expected, name, rtol, atol)
    except GradingError as err:
        if hint:
            raise GradingError(f"{err}\n  hint: {hint}") from None
        raise


def _type_mismatch(path: str, actual: object, expected: object) -> GradingError:
    extra = ""
    if isinstance(actual, np.generic) and type(expected) in (int, float, bool):
        extra = f" (convert it with {type(expected).__name__}(...))"
    elif type(actual) in _SEQUENCES and type(expected) in _SEQUENCES:
        extra = f" (convert it with {type(expected).__name__}(...))"
    return GradingError(f"{path}: expected type {type_name(expected)} (like {short(expected)}), "
                        f"got type {type_name(actual)}: {short(actual)}{extra}")


def _equal(actual, expected, path: str, rtol: float, atol: float) -> None:
    """Recursive worker: raises GradingError at the first difference, naming its path."""
    te = type(expected)
    if type(actual) is not te:
        raise _type_mismatch(path, actual, expected)
    if te in _SCALARS:
        if actual != expected:
            raise GradingError(f"{path}: expected {short(expected)}, got {short(actual)}")
    elif te in _FLOATS:
        _floats(actual, expected, path, rtol, atol)
    elif te is np.ndarray:
        if expected.dtype.kind in "biufc":
            check_array(actual, expected, rtol=rtol, atol=atol, name=path)
        else:
            check_array_like_objects(actual, expected, path, rtol, atol)
    elif isinstance(expected, np.generic):
        check_array(np.asarray(actual), np.asarray(expected), rtol=rtol, atol=atol, name=path)
    elif te in _SEQUENCES or (issubclass(te, tuple) and hasattr(te, "_fields")):
        _sequences(actual, expected, path, rtol, atol)
    elif te is dict:
        _dicts(actual, expected, path, rtol, atol)
    elif te in _SETS:
        _sets(actual, expected, path)
    elif isinstance(expected, enum.Enum):
        if actual is not expected:
            raise GradingError(f"{path}: expected {expected!r}, got {actual!r}")
    elif dataclasses.is_dataclass(expected) and not isinstance(expected, type):
        for field in dataclasses.fields(expected):
            _equal(getattr(actual, field.name), getattr(expected, field.name), f"{path}.{field.name}", rtol, atol)
    else:
        raise HarnessError(f"check_equal does not know how to compare {type_name(expected)} at {path}; "
                           "compare its fields (or use check_array for arrays)")


def check_array_like_objects(actual, expected, path, rtol, atol) -> None:
    """Object/str arrays: same shape and dtype, then element by element through _equal."""
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        raise GradingError(f"{path}: expected array shape {expected.shape} dtype {expected.dtype}, "
                           f"got shape {actual.shape} dtype {actual.dtype}")
    for idx in np.ndindex(expected.shape):
        _equal(actual[idx], expected[idx], f"{path}[{', '.join(map(str, idx))}]", rtol, atol)


def _floats(actual, expected, path, rtol, atol) -> None:
    if type(expected) is float and math.isnan(expected) and math.isnan(actual):
        return
    if actual == expected or abs(actual - expected) <= atol + rtol * abs(expected):
        return
    tol = f" (tolerance {atol:g} + {rtol:g}*|expected|)" if (rtol or atol) else ""
    raise GradingError(f"{path}: expected {expected!r}, got {actual!r}{tol}")


def _sequences(actual, expected, path, rtol, atol) -> None:
    n_a = list.__len__(actual) if isinstance(actual, list) else tuple.__len__(actual)
    n_e = len(expected)
    if n_a != n_e:
        raise GradingError(f"{path}: expected {n_e} items, got {n_a}: expected {short(expected)}, "
                           f"got {short(actual)}")
    for i, (a, e) in enumerate(zip(actual, expected)):
        _equal(a, e, f"{path}[{i}]", rtol, atol)


def _check_hashables(values, path: str) -> None:
    """Keys and set elements must be trusted builtin hashables (so hashing and == are not the student's)."""
    for v in values:
        t = type(v)
        if t in _SCALARS or t in _FLOATS or t is frozenset or isinstance(v, enum.Enum):
            if t is frozenset:
                _check_hashables(v, path)
            continue
        if t is tuple:
            _check_hashables(v, path)
            continue
        raise GradingError(f"{path}: contains a key/element of type {type_name(v)}; expected plain values "
                           "(int, str, tuple, ...)")


def _dicts(actual, expected, path, rtol, atol) -> None:
    _check_hashables(dict.keys(actual), path)
    a_keys, e_keys = set(dict.keys(actual)), set(expected.keys())
    missing, extra = e_keys - a_keys, a_keys - e_keys
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing keys {short(sorted(missing, key=repr))}")
        if extra:
            parts.append(f"unexpected keys {short(sorted(extra, key=repr))}")
        raise GradingError(f"{path}: " + "; ".join(parts))
    for key in sorted(expected, key=repr):
        _equal(dict.__getitem__(actual, key), expected[key], f"{path}[{key!r}]", rtol, atol)


def _sets(actual, expected, path) -> None:
    _check_hashables(actual, path)
    a = set(actual)
    missing, extra = expected - a, a - expected
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing {short(sorted(missing, key=repr))}")
        if extra:
            parts.append(f"unexpected {short(sorted(extra, key=repr))}")
        raise GradingError(f"{path}: sets differ: " + "; ".join(parts))
