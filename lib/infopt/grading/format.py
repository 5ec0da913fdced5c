"""Short, safe descriptions of values for failure messages (never calls a student's __repr__ on unknown types)."""
from __future__ import annotations

import numpy as np

# Types whose repr we trust: builtin scalars and numpy scalars (checked by exact type, not isinstance).
_SAFE_SCALARS = (type(None), bool, int, float, complex, str, bytes)
MAX_REPR = 120


def type_name(value: object) -> str:
    """The qualified name of a value's type, e.g. 'numpy.ndarray' or 'int'."""
    t = type(value)
    mod = t.__module__
    return t.__qualname__ if mod == "builtins" else f"{mod}.{t.__qualname__}"


def short(value: object, limit: int = MAX_REPR) -> str:
    """A repr of value cut to `limit` characters; unknown types are described, not repr'd."""
    t = type(value)
    if t in _SAFE_SCALARS or isinstance(value, np.generic) and t.__module__ == "numpy":
        text = repr(value)
    elif t in (list, tuple, set, frozenset, dict):
        try:
            text = _container_repr(value, limit)
        except Exception:  # a rigged element inside; describe instead
            text = f"<{type_name(value)} of {len(value)} items>"
    elif t is np.ndarray:
        text = f"<ndarray shape={value.shape} dtype={value.dtype}>"
    else:
        text = f"<object of type {type_name(value)}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _container_repr(value, limit: int) -> str:
    """repr of a builtin container whose items are all safe; raises when an item is not."""
    def item(v):
        if type(v) in (list, tuple, set, frozenset, dict):
            return _container_repr(v, limit)
        if type(v) in _SAFE_SCALARS or type(v) is np.ndarray or isinstance(v, np.generic):
            return short(v, limit)
        raise TypeError("unsafe item")

    if type(value) is dict:
        body = ", ".join(f"{item(k)}: {item(v)}" for k, v in list(value.items())[:20])
        return "{" + body + (", ..." if len(value) > 20 else "") + "}"
    items = list(value)[:20]
    body = ", ".join(item(v) for v in items) + (", ..." if len(value) > 20 else "")
    if type(value) is list:
        return f"[{body}]"
    if type(value) is tuple:
        return f"({body}{',' if len(value) == 1 else ''})"
    if not value:
        return f"{type(value).__name__}()"
    return "{" + body + "}" if type(value) is set else f"frozenset({{{body}}})"


def fmt_index(index: tuple[int, ...]) -> str:
    """An array index as the student would type it: (1, 2) -> '[1, 2]'."""
    return "[" + ", ".join(str(int(i)) for i in index) + "]"
