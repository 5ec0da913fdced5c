"""Remove hidden-test and solution text from anything a student (or the run's logs) receives.

The grader never hands the kernel a hidden test in clear, but a student's code can still try to put grader text
into an error message or its output (from a test's frame, bytecode constants, or a guess). Every message, reason,
flag, note, output excerpt and log line is passed through a `Scrubber` built from the unit's source: any secret
line (a stripped line of a hidden-test block or a solution block that the release does not show; not a line of a
multi-line string, which is a test's input and is shown when the case fails), and any run of
`WINDOW` characters of such a line's code (string literals excluded, so a check's own message survives), is
replaced by `[hidden]`.
"""
from __future__ import annotations

import re
from typing import Any, Iterable

MIN_LINE = 12  # shorter secret lines (`return out`, `pass`) are too common to mean a leak
WINDOW = 40    # this many characters of a secret line's code, outside string literals, count as a leak
MASK = "[hidden]"
_STRING = re.compile(r"""[rbuf]{0,2}("[^"\\\n]*(?:\\.[^"\\\n]*)*"|'[^'\\\n]*(?:\\.[^'\\\n]*)*')""", re.I)
_BEGIN_SOLUTION, _END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"
_BEGIN_HIDDEN, _END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"


def _string_body_lines(source: str) -> set[int]:
    """Line numbers (1-based) that lie wholly inside a multi-line string literal of `source`: a test's input data
    (an MLIR program in triple quotes), which the failure message shows the student on purpose."""
    import io
    import tokenize

    inside: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                inside.update(range(tok.start[0] + 1, tok.end[0]))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return set()
    return inside


def secret_lines(sources: Iterable[str]) -> list[str]:
    """The stripped lines of every hidden-test and solution block in `sources` (instructor cell sources), less the
    lines inside a multi-line string (test inputs, shown to the student when a case fails)."""
    found: list[str] = []
    for source in sources:
        inside = False
        data = _string_body_lines(source)
        for number, raw in enumerate(source.splitlines(), 1):
            line = raw.strip()
            if line in (_BEGIN_SOLUTION, _BEGIN_HIDDEN):
                inside = True
            elif line in (_END_SOLUTION, _END_HIDDEN):
                inside = False
            elif inside and line and number not in data:
                found.append(line)
    return found


def _windows(lines: Iterable[str]) -> set[str]:
    """Every WINDOW-character run of the code (outside string literals) of `lines`."""
    found: set[str] = set()
    for line in lines:
        for piece in _STRING.split(line)[::2]:
            piece = piece.strip()
            for start in range(0, max(len(piece) - WINDOW + 1, 0)):
                found.add(piece[start:start + WINDOW])
    return found


class Scrubber:
    """Callable text -> text with every overlap with the secret lines masked; `public` lines are never secret."""

    def __init__(self, secret: Iterable[str], public: Iterable[str] = ()) -> None:
        shown = {line.strip() for line in public}
        self.lines = sorted({s.strip() for s in secret if len(s.strip()) >= MIN_LINE and s.strip() not in shown},
                            key=len, reverse=True)
        self.windows = _windows(self.lines) - _windows(shown)  # what the release shows anyway is not a leak

    def __bool__(self) -> bool:
        return bool(self.lines)

    def __call__(self, text: str) -> str:
        if not text or not self.lines or not isinstance(text, str):
            return text
        marked = bytearray(len(text))
        for line in self.lines:
            at = text.find(line)
            while at >= 0:
                marked[at:at + len(line)] = b"\1" * len(line)
                at = text.find(line, at + 1)
        if self.windows and len(text) >= WINDOW:
            for start in range(len(text) - WINDOW + 1):
                if text[start:start + WINDOW] in self.windows:
                    marked[start:start + WINDOW] = b"\1" * WINDOW
        if not any(marked):
            return text
        out, inside = [], False
        for char, flag in zip(text, marked):
            if flag and not inside:
                out.append(MASK)
            if not flag:
                out.append(char)
            inside = bool(flag)
        return "".join(out)

    def deep(self, value: Any) -> Any:
        """`value` with every string inside it (dicts, lists, tuples) scrubbed; other values unchanged."""
        if isinstance(value, str):
            return self(value)
        if isinstance(value, dict):
            return {k: self.deep(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self.deep(v) for v in value)
        return value

    def spec(self) -> dict:
        """Plain data to rebuild this scrubber in another process (a pool worker, a Dask worker)."""
        return {"secret": list(self.lines), "public": []}

    @classmethod
    def from_spec(cls, spec: dict | None) -> "Scrubber":
        """The scrubber `spec()` described (an empty one for None)."""
        spec = spec or {}
        return cls(spec.get("secret", ()), spec.get("public", ()))
