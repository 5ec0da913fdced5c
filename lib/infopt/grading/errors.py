"""The two kinds of failure a test cell can raise: the student's (GradingError) and the harness's (HarnessError)."""
from __future__ import annotations


class GradingError(AssertionError):
    """The student's answer is wrong; the message says what was expected, what was got, and where."""


class HarnessError(RuntimeError):
    """The checking code itself is wrong (bad arguments from the test author); never the student's fault."""

    def __init__(self, message: str) -> None:
        super().__init__(f"bug in the test harness, not in your code: {message}")


def is_harness_error(ename: str) -> bool:
    """True when an exception class name (as nbgrader/nbclient report it) is a harness error, not a student one."""
    return ename == HarnessError.__name__
