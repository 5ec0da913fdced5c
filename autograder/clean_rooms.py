"""The grader's side of the clean room (`infopt.grading.clean_room`): per student, a zygote in a sandbox of its own
(its own uid, folders, pid namespace and caps, so the student's kernel can neither see nor signal it) that a judged
test's guarded calls reach through a socket pair.

What a room loads is decided here, from the submitted notebook, never asked of the kernel: every solution cell up
to the exercise's, whole, and of every other cell before it only what defines names (imports, functions, classes,
constants), so the lesson's computations, which may use the library's answer legitimately, never run there.

    rooms = CleanRooms(limits, cells)          # at the start of a student's run
    sock = rooms.session("topo")               # for one judged test: handed to the judge with the kernel's socket
    rooms.close()
"""
from __future__ import annotations

import ast
import socket
import subprocess
import sys
from pathlib import Path

from infopt.grading import wire

from .sandbox import Limits, Sandbox

# An assignment is kept when its value calls nothing: literals, names, attributes, and containers and arithmetic of
# them. (A name that reaches a guarded library object reaches its tripwire: the room removed it before loading.)
_CONSTANT = (ast.Constant, ast.Tuple, ast.List, ast.Set, ast.Dict, ast.UnaryOp, ast.BinOp, ast.operator,
             ast.unaryop, ast.expr_context, ast.Name, ast.Attribute, ast.Subscript, ast.Slice)


def _constant(node: ast.AST) -> bool:
    return all(isinstance(n, _CONSTANT) for n in ast.walk(node))


def definitions(source: str) -> str:
    """The statements of a cell that only define names: imports, functions, classes and constant assignments (a
    cell that does not parse gives nothing)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ""
    kept = [node for node in tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            or (isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and _constant(node.value))]
    return "\n".join(ast.unparse(node) for node in kept)


def room_sources(cells: list[dict], exercise: str) -> list[str]:
    """What a room for `exercise` runs, in order: the definitions of the cells before its solution cell (every
    solution cell whole), then its solution cell. Tests are never included."""
    sources: list[str] = []
    for cell in cells:
        kind, source = cell.get("kind"), cell.get("source") or ""
        if kind == "solution":
            sources.append(source)
            if cell.get("grade_id") == exercise:
                return sources
        elif kind not in ("markdown", "test") and source.strip():
            kept = definitions(source)
            if kept:
                sources.append(kept)
    return sources


def imported_modules(cells: list[dict]) -> list[str]:
    """The modules the notebook's cells import at their top level (what the zygote loads once for every room)."""
    names: list[str] = []
    for cell in cells:
        if cell.get("kind") == "markdown":
            continue
        try:
            tree = ast.parse(cell.get("source") or "")
        except SyntaxError:
            continue
        found: list[str] = []
        for node in tree.body:
            if isinstance(node, ast.Import):
                found += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.append(node.module)
        # of a test cell (the instructor's), only the library it imports: the helpers a test sends into the room
        # must be loaded, and sealed, before the student's cells are (clean_room.LibrarySeal)
        names += [n for n in found if cell.get("kind") != "test" or n == "infopt" or n.startswith("infopt.")]
    return list(dict.fromkeys(names))


class CleanRooms:
    """One student's clean-room zygote: started with the student's kernel, asked for a session per judged test.
    A zygote that died (the student's code in a room killed it, or the memory cap did) is started again, up to
    RESTARTS times; after that `session` gives None and the executor flags the test."""

    RESTARTS = 3

    def __init__(self, limits: Limits, cells: list[dict], scratch: Path | None = None) -> None:
        self.cells = cells
        self.sandbox = Sandbox(limits, scratch=scratch)
        self.restarts = 0
        self.control: socket.socket | None = None
        self.proc: subprocess.Popen | None = None
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    def _start(self) -> None:
        mine, theirs = socket.socketpair()
        self.control = mine
        try:
            argv = self.sandbox.wrap([sys.executable, "-m", "infopt.grading.clean_room", str(theirs.fileno())])
            self.proc = subprocess.Popen(argv, env=self.sandbox.env(), cwd=str(self.sandbox.work),
                                         pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wire.send(mine, {"modules": imported_modules(self.cells)})
        finally:
            theirs.close()

    def session(self, exercise: str) -> socket.socket | None:
        """A socket to a fresh session for `exercise` (None when the zygote is gone for good)."""
        while True:
            if self.proc is not None and self.proc.poll() is None:
                ours, theirs = socket.socketpair()
                try:
                    socket.send_fds(self.control, [b"S"], [theirs.fileno()])
                    wire.send(self.control, {"sources": room_sources(self.cells, exercise)})
                    return ours
                except (OSError, wire.WireError):
                    ours.close()
                finally:
                    theirs.close()
            if self.restarts >= self.RESTARTS:
                return None
            self.restarts += 1
            self._stop()
            self.sandbox.kill_all()
            try:
                self._start()
            except (OSError, wire.WireError):
                return None

    def _stop(self) -> None:
        if self.control is not None:
            self.control.close()
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()

    def close(self) -> None:
        """Stop the zygote and every room, and remove the sandbox."""
        self._stop()
        self.sandbox.cleanup()
