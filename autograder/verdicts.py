"""The grader's side of the verdict protocol (the kernel's side, and the protocol itself, are in kernel_boot.py).

`Sealer` turns each test cell (and each probe) into a trigger cell carrying the test compiled inside the grader's
wrapper and sealed with the run's secret; `Channel` reads the kernel's signed records from the verdict FIFO and
keeps what was wrong with anything else on it. A test's pass or fail is read from these records only, never from
the kernel's execute reply.
"""
from __future__ import annotations

import ast
import functools
import json
import marshal
import os
import secrets
import sys
import warnings
from pathlib import Path

from .kernel_boot import AUDIT, DETAIL, DETAIL_LINE, END_LINE, ERR_LINE, EXC_INFO, OK_LINE
from .sealed import check_line, seal, subkeys

# Modules whose state a verdict relies on (changes void it) and whose names a test may trust.
CHECKER_MODULES = ("numpy", "numpy.testing", "numpy.testing._private.utils", "math", "re", "infopt.grading",
                   "infopt.grading.arrays", "infopt.grading.checks", "infopt.grading.errors",
                   "infopt.grading.format", "infopt.grading.structural")
PROBE_SECONDS = 30.0  # generous: a probe that never answers voids the test, so a loaded machine must not cause one
_CANARIES = (
    "_result = {a}\nassert _result == {b}, 'expected {b}'\n",
    "__import__('infopt.grading', fromlist=['check_equal']).check_equal({a}, {b}, name='result')\n",
    "__import__('numpy').testing.assert_allclose({a}.5, -{a}.5, err_msg='result')\n",
)


def _transform(source: str) -> str:
    """IPython syntax (magics, `!` lines) as plain Python, line for line, as IPython itself would run it."""
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


def _placed(node: ast.AST, line: int) -> ast.AST:
    for sub in ast.walk(node):
        if isinstance(sub, (ast.stmt, ast.expr, ast.excepthandler)):
            sub.lineno = sub.end_lineno = line
            sub.col_offset, sub.end_col_offset = 0, 1
    return node


def _call(func: str, args: list[ast.expr], line: int) -> ast.stmt:
    return _placed(ast.Expr(ast.Call(ast.Constant(func), args, [])), line)


def wrap_test(source: str, filename: str, nonce: str):
    """The test compiled inside the grader's wrapper: its own statements (line numbers kept), then the report calls.

        try:
            try:   <the test>
            except: AUDIT("infopt.report", nonce, "err"); DETAIL(EXC_INFO(), nonce)
            else:   AUDIT("infopt.report", nonce, "ok")
        finally:    AUDIT("infopt.report", nonce, "end")

    AUDIT, EXC_INFO and DETAIL are placeholders the kernel's signer replaces by the real functions (constants of
    the code object: no name lookup a student could redirect). Raises SyntaxError for a test that does not parse.
    """
    tree = ast.parse(_transform(source), filename)
    report = lambda what, line: _call(AUDIT, [ast.Constant("infopt.report"), ast.Constant(nonce),  # noqa: E731
                                              ast.Constant(what)], line)
    handler = _placed(ast.ExceptHandler(type=None, name=None, body=[]), ERR_LINE)
    handler.body = [report("err", ERR_LINE),
                    _call(DETAIL, [_placed(ast.Call(ast.Constant(EXC_INFO), [], []), DETAIL_LINE),
                                   ast.Constant(nonce)], DETAIL_LINE)]
    inner = ast.Try(body=tree.body or [ast.Pass(lineno=1, col_offset=0)], handlers=[handler],
                    orelse=[report("ok", OK_LINE)], finalbody=[])
    outer = ast.Try(body=[inner], handlers=[], orelse=[], finalbody=[report("end", END_LINE)])
    for node in (inner, outer):
        node.lineno, node.col_offset = 1, 0
        node.end_lineno, node.end_col_offset = END_LINE, 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)  # "'str' object is not callable": the placeholders
        return compile(ast.Module(body=[outer], type_ignores=[]), filename, "exec", dont_inherit=True)


@functools.lru_cache(maxsize=4096)
def _parsed(source: str) -> ast.Module | None:
    """The cell's syntax tree (IPython syntax allowed), parsed once per source; None when it does not parse."""
    try:
        return ast.parse(_transform(source))
    except SyntaxError:
        return None


@functools.lru_cache(maxsize=4096)
def imported_names(source: str) -> tuple[tuple[str, str, str], ...]:
    """(bound name, module, attribute or '') for each top-level import in `source` (IPython syntax allowed)."""
    tree = _parsed(source)
    if tree is None:
        return ()
    found = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    found.append((alias.asname, alias.name, ""))
                else:
                    top = alias.name.split(".")[0]
                    found.append((top, top, ""))
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if alias.name != "*":
                    found.append((alias.asname or alias.name, node.module, alias.name))
    return tuple(found)


@functools.lru_cache(maxsize=4096)
def names_read(source: str) -> frozenset[str]:
    """Every bare name `source` reads, at any depth (IPython syntax allowed; nothing for a cell that does not parse)."""
    tree = _parsed(source)
    if tree is None:
        return frozenset()
    return frozenset(n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))


def trusted_before(cells: list[dict], index: int) -> list[tuple[str, str, str]]:
    """The checker-module bindings the instructor's cells before `index` (and the test itself) made and the test
    at `index` reads, latest first. A name the test never reads cannot change its verdict, and an earlier test that
    failed before its import line leaves that name unbound: neither is tampering."""
    bound: dict[str, tuple[str, str, str]] = {}
    for cell in cells[: index + 1]:
        if cell.get("author") == "instructor" and cell["kind"] in ("code", "test", "readonly"):
            for name, module, attr in imported_names(cell["source"]):
                if module in CHECKER_MODULES:
                    bound[name] = (name, module, attr)
                else:
                    bound.pop(name, None)
    used = names_read(cells[index]["source"])
    return [entry for name, entry in bound.items() if name in used]


def library_modules(cells: list[dict]) -> list[str]:
    """The infopt modules the instructor's cells import (the hello snapshot covers them and what they load)."""
    found: list[str] = []
    for cell in cells:
        if cell.get("author") == "instructor" and cell["kind"] in ("code", "test", "readonly"):
            for _, module, attr in imported_names(cell["source"]):
                if (module == "infopt" or module.startswith("infopt.")) and module not in found:
                    found.append(module)
    return found


class Sealer:
    """Makes the trigger cells for one kernel. Payloads are sealed in the order `trigger` is called: hello first,
    then, for each test, its probes and the test (the kernel accepts each sequence number once, in order)."""

    def __init__(self, key: bytes) -> None:
        self.key, self.seq = key, 0

    def trigger(self, payload: dict, pad_to: int = 0) -> tuple[int, str]:
        """(seq, cell text) for one payload; `pad_to` bytes at least (probes as big as the test they precede)."""
        payload = {**payload, "seq": self.seq}
        data = marshal.dumps(payload)
        data += b"\0" * max(0, pad_to - len(data))  # marshal.loads ignores trailing bytes
        blob = seal(self.key, secrets.token_bytes(16), data)
        self.seq += 1
        return payload["seq"], f'__import__("sys").audit("infopt.run", "{blob}")'

    @staticmethod
    def hello(library: list[str]) -> dict:
        """The first payload: the kernel snapshots the machinery (checker modules, infopt, IPython, ipykernel)."""
        return {"kind": "hello", "void": list(CHECKER_MODULES), "flag": list(library)}

    @staticmethod
    def test(source: str, cell: int, label: str, trusted: list, kind: str = "test") -> dict:
        """The payload of one test (or probe): its wrapped code, a fresh token, the names it trusts."""
        nonce = secrets.token_hex(16)
        code = wrap_test(source, f"<grading test {label}>", nonce)
        return {"kind": kind, "cell": cell, "nonce": nonce, "code": marshal.dumps(code),
                "trusted": [tuple(t) for t in trusted]}

    @staticmethod
    def size(payload: dict) -> int:
        """Bytes of a payload once sequenced (what a probe is padded to)."""
        return len(marshal.dumps({**payload, "seq": 0})) + 8

    @classmethod
    def probes(cls, cell: int, label: str) -> list[dict]:
        """Three payloads that must fail (an assert, infopt.grading, numpy.testing), labelled like the test."""
        out = []
        for template in _CANARIES:
            a = secrets.randbelow(10**6) + 7
            out.append(cls.test(template.format(a=a, b=a + 1), cell, label, [], "probe"))
        return out


class Channel:
    """The read end of the verdict FIFO: verified records in order; `problems` says what else was on it."""

    def __init__(self, path: Path, key: bytes) -> None:
        _, self.mac_key = subkeys(key)
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self.buffer, self.records, self.problems, self.last = b"", [], [], 0

    def poll(self) -> list[dict]:
        """Read what is there now (never blocks); return the new verified records."""
        new: list[dict] = []
        while self.fd is not None:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            except OSError:
                chunk = b""
            if not chunk:
                break
            self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        for raw in lines:
            body, clean = check_line(self.mac_key, raw.decode("utf-8", "replace"))
            if body is None:
                self._problem("the verdict channel carried data the kernel's signer did not sign")
                continue
            if not clean:
                self._problem("unsigned data was written to the verdict channel")
            record = json.loads(body)
            if record.get("r", 0) <= self.last:
                self._problem("a signed record on the verdict channel was repeated")
                continue
            self.last = record["r"]
            self.records.append(record)
            new.append(record)
        if len(self.buffer) > 1 << 20:
            self._problem("the verdict channel carried a megabyte of unsigned data")
            self.buffer = b""
        return new

    def _problem(self, text: str) -> None:
        if text not in self.problems:
            self.problems.append(text)

    def find(self, kind: str, seq: int) -> dict | None:
        """The first record of `kind` for trigger `seq`, if it arrived."""
        return next((r for r in self.records if r.get("k") == kind and r.get("seq") == seq), None)

    def close(self) -> None:
        """Close the read end (the records stay)."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def new_key() -> bytes:
    """A fresh 32-byte secret for one kernel."""
    return secrets.token_bytes(32)


def boot_files() -> dict[str, bytes]:
    """The files the sandbox's run folder needs for the kernel's bootstrap: kernel_boot.py and sealed.py."""
    here = Path(__file__).resolve().parent
    return {name: (here / name).read_bytes() for name in ("kernel_boot.py", "sealed.py")}


def kernel_argv(run_dir: Path, connection_file: str) -> list[str]:
    """The kernel command (run inside the sandbox): the bootstrap, then ipykernel on `connection_file`."""
    return [sys.executable, str(Path(run_dir) / "kernel_boot.py"), "-f", connection_file]
