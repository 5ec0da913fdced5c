"""The `forbid` blocks the judge has open: a call that crosses to the student's kernel inside one is guarded there too
(infopt.grading.remote sends them with the call; infopt.grading.forbid opens and closes them)."""
from __future__ import annotations

OPEN: list[dict] = []


def push(targets: tuple[str, ...], exercise: str, why: str) -> None:
    """A `forbid` block opened: calls made to the kernel inside it carry its targets."""
    OPEN.append({"targets": list(targets), "exercise": exercise, "why": why})


def pop() -> None:
    """The innermost `forbid` block closed."""
    if OPEN:
        OPEN.pop()
