"""check_true / check_raises: the two checks that are not comparisons."""
from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np

from .errors import GradingError, HarnessError
from .format import short, type_name


def check_true(cond: object, msg: str) -> None:
    """Check a condition the test computed; `cond` must be a real bool (or numpy bool), so a rigged object fails."""
    if type(msg) is not str or not msg:
        raise HarnessError("check_true needs a message saying what was expected")
    if type(cond) is not bool and type(cond) is not np.bool_:
        raise GradingError(f"{msg} (the check got a {type_name(cond)} instead of True/False: {short(cond)})")
    if not cond:
        raise GradingError(msg)


def check_raises(exc_type: type[BaseException] | tuple[type[BaseException], ...], fn: Callable[..., Any],
                 *args: Any, match: str | None = None, name: str | None = None, **kwargs: Any) -> BaseException:
    """Check that fn(*args, **kwargs) raises exc_type (message matching regex `match`); return the exception."""
    types = exc_type if isinstance(exc_type, tuple) else (exc_type,)
    if not types or not all(isinstance(t, type) and issubclass(t, BaseException) for t in types):
        raise HarnessError(f"check_raises needs exception classes, got {exc_type!r}")
    if not callable(fn):
        raise HarnessError(f"check_raises needs a callable, got {type_name(fn)}")
    call = name or f"{getattr(fn, '__name__', 'the function')}(...)"
    want = " or ".join(t.__name__ for t in types)
    try:
        fn(*args, **kwargs)
    except types as err:
        if match is not None and not re.search(match, str(err)):
            raise GradingError(f"{call} raised {type(err).__name__} as expected, but its message "
                               f"{short(str(err))} does not mention {match!r}") from None
        return err
    except Exception as err:  # the student raised something else: their error, reported as such
        raise GradingError(f"{call} should raise {want}, but it raised {type(err).__name__}: "
                           f"{short(str(err))}") from err
    raise GradingError(f"{call} should raise {want}, but it returned normally")
