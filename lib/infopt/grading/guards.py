"""What the judge guards: the `forbid` blocks it has open (a call that crosses to the student's kernel inside one is
guarded there too: infopt.grading.remote sends them with the call, infopt.grading.forbid opens and closes them), and
native code, which never runs in the judge (it is the grader's uid, outside the sandbox, beside the expected values)."""
from __future__ import annotations

OPEN: list[dict] = []


def push(targets: tuple[str, ...], exercise: str, why: str) -> None:
    """A `forbid` block opened: calls made to the kernel inside it carry its targets."""
    OPEN.append({"targets": list(targets), "exercise": exercise, "why": why})


def pop() -> None:
    """The innermost `forbid` block closed."""
    if OPEN:
        OPEN.pop()


IN_JUDGE = False   # set by the judge's child process before it runs a test (autograder/judge.py)


def check_native(what: str) -> None:
    """Refuse to make native code in the judge: data the student's code returned must never become machine code
    here. Called by the library wherever it JIT-compiles or loads machine code."""
    if IN_JUDGE:
        from .errors import HarnessError

        raise HarnessError(f"{what} in the judge: a test that runs compiled code must be listed as [[in_kernel]] in "
                           "its unit.toml (native code runs only in the student's sandbox)")


RUNNER = None   # in a judge child: the channel whose clean room runs native code for it (autograder/judge.py)


def native_runner():  # noqa: ANN201 (a remote.Channel; typed loosely: this module imports nothing of the package)
    """What runs native code for the judge: a sandboxed room that holds no student code (None outside a judge, or
    when the judge has no room: the library then refuses, see check_native)."""
    return RUNNER if IN_JUDGE else None
