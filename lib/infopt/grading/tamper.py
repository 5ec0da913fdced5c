"""Static scan of student code for lines that tamper with the grading machinery, so a human can review them.

The grader runs it on every cell the student wrote. A finding does not change a score by itself: it flags the
submission for review and names the cell, the line and what the line does. Uses only the standard library.
"""
from __future__ import annotations

import ast
import dataclasses
import re

# Names the test cells rely on: rebinding one at the top level of a student cell changes what the tests do.
_GUARDED_BUILTINS = frozenset({
    "isinstance", "issubclass", "type", "len", "abs", "all", "any", "bool", "int", "float", "complex", "str",
    "repr", "list", "dict", "tuple", "set", "frozenset", "range", "sorted", "sum", "min", "max", "round",
    "hasattr", "getattr", "setattr", "callable", "id", "object", "print", "iter", "next", "zip", "map",
    "enumerate", "AssertionError", "Exception", "BaseException", "TypeError", "ValueError", "__import__",
    "__build_class__", "globals", "locals", "vars", "open", "exec", "eval", "compile",
})
# Dunders that change how a returned object compares, converts or claims its type.
_RIGGING_DUNDERS = frozenset({
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__bool__", "__len__", "__hash__",
    "__instancecheck__", "__subclasscheck__", "__class__", "__array__", "__array_ufunc__",
    "__array_function__", "__array_interface__", "__array_priority__", "__float__", "__int__", "__index__",
    "__getattribute__", "__abs__", "__sub__", "__rsub__", "__format__",
})
# Modules whose attributes the tests call; assigning to one of their attributes replaces a checker.
_TESTING_MODULES = ("numpy", "np", "numpy.testing", "np.testing", "infopt.grading", "grading", "unittest",
                    "math", "torch", "torch.testing", "builtins", "__builtins__", "pytest")
# IPython hooks that rewrite or swallow the code of later cells (the test cells among them).
_IPYTHON_HOOKS = frozenset({
    "input_transformers_cleanup", "input_transformers_post", "input_transformer_manager", "ast_transformers",
    "set_custom_exc", "custom_exceptions", "showtraceback", "run_cell", "run_cell_async", "run_ast_nodes",
    "run_code", "should_run_async", "transform_cell", "register_magic_function", "InteractiveShell",
    # ipykernel's execution and reply path (a replaced do_execute can answer "ok" for a failed cell)
    "do_execute", "execute_request", "send_response", "shell_handlers", "dispatch_shell", "CustomTB",
})
# Names that are IPython hooks only when reached through the shell (`get_ipython().events`, `sys.excepthook`).
_SHELL_HOOKS = frozenset({"events", "excepthook", "displayhook", "user_ns", "user_global_ns", "compile"})


def _is_hook(dotted: str) -> bool:
    """True when a dotted name reaches an IPython hook that can rewrite or silence later cells."""
    parts = dotted.replace("()", "").replace("[]", "").split(".")
    if any(part in _IPYTHON_HOOKS for part in parts):
        return True
    via_shell = "get_ipython" in dotted or parts[0] in ("sys", "ip", "ipython", "shell", "_ip")
    return via_shell and any(part in _SHELL_HOOKS for part in parts[1:])
_INTROSPECTION = frozenset({"_getframe", "settrace", "setprofile", "get_objects", "get_referrers", "f_back",
                            "f_globals", "f_locals", "gi_frame", "tb_frame", "addaudithook"})
def _library(name: str) -> bool:
    """True for a name reached through an import of infopt (a module, or a class or function it exports)."""
    return name == "infopt" or name.startswith("infopt.")


_SHADOWED_MODULES = frozenset({"numpy", "infopt", "builtins", "unittest", "math", "torch", "IPython"})
_GRADER_PATHS = ("solutions/", "/solutions", "gradebook.db", "/autograder", "/course/")
# Files a kernel reads when it starts: writing one is an attempt to persist into later kernels.
_STARTUP_PATHS = ("usercustomize", "sitecustomize", "profile_default/startup", ".ipython/profile", "ipython_config",
                  "ipython_kernel_config")
_MAGIC_LINE = re.compile(r"^(\s*)([%!].*)$")


@dataclasses.dataclass(frozen=True)
class TamperFinding:
    """One suspicious line: where it is (cell label, 1-based line), the line's text, and what it does."""

    cell: str
    line: int
    code: str
    reason: str

    def __str__(self) -> str:
        return f"{self.cell}, line {self.line}: {self.reason}: `{self.code.strip()[:120]}`"


def scan_source(source: str, cell: str = "cell", aliases: dict[str, str] | None = None) -> list[TamperFinding]:
    """Scan one cell's Python source (IPython magics allowed) and return the lines that tamper with grading.

    `aliases` carries import aliases from earlier cells (`np` -> `numpy`); it is updated in place.
    """
    if not isinstance(source, str):
        raise TypeError(f"scan_source needs the cell's source as str, got {type(source).__name__}")
    lines = source.splitlines()
    findings: list[TamperFinding] = []
    cleaned = []
    for number, text in enumerate(lines, start=1):
        match = _MAGIC_LINE.match(text)
        if match:  # IPython magics and shell escapes are not Python; judge them, then blank them out
            if match.group(2).startswith("!") or re.match(r"%+\s*(sx|system|sh|bash|script|run|load)\b",
                                                          match.group(2)):
                findings.append(TamperFinding(cell, number, text, "runs a shell command or external script"))
            cleaned.append(match.group(1) + "pass")
        else:
            cleaned.append(text)
    try:
        tree = ast.parse("\n".join(cleaned))
    except SyntaxError:
        return findings  # the cell will fail when it runs; nothing to judge statically
    visitor = _Visitor(cell, lines, aliases)
    visitor.visit(tree)
    return findings + visitor.findings


def scan_cells(cells: list[tuple[str, str]]) -> list[TamperFinding]:
    """Scan (label, source) pairs in order; return every finding, cell by cell."""
    found: list[TamperFinding] = []
    aliases: dict[str, str] = {}
    for label, source in cells:
        found.extend(scan_source(source, label, aliases))
    return found


def _dotted(node: ast.AST) -> str:
    """'a.b.c' for a Name/Attribute chain (calls and subscripts shown as '()' and '[]'), '' otherwise."""
    parts = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Name):
            parts.append(node.id)
            break
        elif isinstance(node, ast.Call):
            parts.append("()")
            node = node.func
        elif isinstance(node, ast.Subscript):
            parts.append("[]")
            node = node.value
        else:
            return ""
    return ".".join(reversed(parts)).replace(".()", "()").replace(".[]", "[]")


class _Visitor(ast.NodeVisitor):
    """Walks one cell's AST and records findings with their line numbers."""

    def __init__(self, cell: str, lines: list[str], aliases: dict[str, str] | None = None) -> None:
        self.cell, self.lines, self.findings = cell, lines, []
        self.aliases = aliases if aliases is not None else {}  # `import numpy as np` -> {'np': 'numpy'}
        self.depth = 0  # >0 inside a function or class body

    def flag(self, node: ast.AST, reason: str) -> None:
        line = getattr(node, "lineno", 1)
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        finding = TamperFinding(self.cell, line, text, reason)
        if finding not in self.findings:
            self.findings.append(finding)

    def _resolve(self, dotted: str) -> str:
        """`dotted` with its first name replaced by what an earlier import bound it to."""
        first, dot, rest = dotted.partition(".")
        return self.aliases.get(first, first) + dot + rest

    # --- bindings -------------------------------------------------------------------------------------------
    def _check_target(self, target: ast.AST, node: ast.AST) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._check_target(element, node)
            return
        if isinstance(target, ast.Name) and self.depth == 0 and target.id in _GUARDED_BUILTINS:
            self.flag(node, f"rebinds the builtin `{target.id}` that the tests use")
        dotted = _dotted(target)
        if not dotted:
            return
        head, _, attr = dotted.rpartition(".")
        first, _, rest = head.partition(".")
        head = ".".join(filter(None, [self.aliases.get(first, first), rest]))
        dotted = f"{head}.{attr}" if head else attr
        if head and attr.startswith(("assert_", "check_", "assert")):
            self.flag(node, f"replaces `{dotted}`, a checking function")
        elif head in _TESTING_MODULES or head.endswith(".testing") or head.startswith(("np.testing",
                                                                                     "infopt.grading")):
            self.flag(node, f"replaces `{dotted}`, part of the testing machinery")
        elif _is_hook(dotted):
            self.flag(node, f"changes the IPython hook `{dotted}`")
        elif dotted.startswith(("sys.modules", "sys.meta_path", "sys.path_hooks", "sys.excepthook")):
            self.flag(node, f"rewrites `{dotted}` (module lookup or error reporting)")
        elif attr in _RIGGING_DUNDERS:
            self.flag(node, f"assigns the comparison/type hook `{attr}` on an object")
        elif "__builtins__" in dotted or dotted.startswith("builtins"):
            self.flag(node, f"rebinds a builtin through `{dotted}`")
        elif _library(head):
            self.flag(node, f"replaces `{dotted}` in the library, which the grader's calls use")

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._check_target(target, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_target(node.target, node)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._check_target(node.target, node)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._check_target(target, node)
        self.generic_visit(node)

    # --- definitions ----------------------------------------------------------------------------------------
    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if self.depth == 0 and node.name in _GUARDED_BUILTINS:
            self.flag(node, f"defines a function named `{node.name}`, shadowing the builtin the tests use")
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if self.depth == 0 and node.name in _GUARDED_BUILTINS:
            self.flag(node, f"defines a class named `{node.name}`, shadowing the builtin the tests use")
        for item in node.body:
            names = []
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names = [item.name]
            elif isinstance(item, ast.Assign):
                names = [t.id for t in item.targets if isinstance(t, ast.Name)]
            for name in names:
                if name in _RIGGING_DUNDERS:
                    self.flag(item, f"class `{node.name}` defines `{name}`, which can fool comparisons")
        for keyword in node.keywords:
            if keyword.arg == "metaclass":
                self.flag(node, f"class `{node.name}` sets a metaclass (can fake isinstance checks)")
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    # --- imports --------------------------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            if alias.name == "gc":
                self.flag(node, f"imports `{alias.name}` (can reach into the grader's objects)")
            if self.depth == 0 and alias.asname in _GUARDED_BUILTINS:
                self.flag(node, f"imports a module as `{alias.asname}`, shadowing the builtin")
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module == "gc":
            self.flag(node, f"imports from `{node.module}` (can reach into the grader's objects)")
        for alias in node.names:
            bound = alias.asname or alias.name
            if node.module:
                self.aliases[bound] = f"{node.module}.{alias.name}"
            if self.depth == 0 and bound in _GUARDED_BUILTINS and node.module != "builtins":
                self.flag(node, f"imports `{alias.name}` as `{bound}`, shadowing the builtin the tests use")
        self.generic_visit(node)

    # --- calls ----------------------------------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        name = _dotted(node.func)
        last = name.rsplit(".", 1)[-1]
        if last in ("setattr", "delattr") and node.args:
            target = _dotted(node.args[0])
            if target in _TESTING_MODULES or "testing" in target or "grading" in target or target in (
                    "builtins", "__builtins__") or target.startswith("sys"):
                self.flag(node, f"{last}() on `{target}`, part of the testing machinery")
            elif len(node.args) > 1 and isinstance(node.args[1], ast.Constant) and node.args[1].value in (
                    _RIGGING_DUNDERS | _IPYTHON_HOOKS):
                self.flag(node, f"{last}() of `{node.args[1].value}`")
            elif _library(self._resolve(target)):
                self.flag(node, f"{last}() on `{self._resolve(target)}` in the library, which the grader's calls use")
        if _is_hook(name):
            self.flag(node, f"calls the IPython hook `{name}`")
        if last in _INTROSPECTION or name in ("sys._getframe", "inspect.currentframe", "inspect.stack"):
            self.flag(node, f"calls `{name}` (inspects or traces the grader's frames)")
        if name.startswith(("sys.modules", "sys.path", "sys.meta_path", "importlib.reload")) and last in (
                "__setitem__", "update", "pop", "insert", "append", "setdefault", "reload", "__delitem__"):
            self.flag(node, f"calls `{name}` (changes which modules the tests import)")
        if name in ("signal.signal", "signal.pthread_sigmask", "os.fork", "os.setsid", "os.kill", "os.killpg"):
            self.flag(node, f"calls `{name}` (signals or processes outside the notebook's control)")
        if name in ("exec", "eval", "compile", "__import__") and not (
                node.args and isinstance(node.args[0], ast.Constant) and name == "__import__"):
            self.flag(node, f"runs dynamically built code with `{name}()`")
        if last == "open" and node.args and isinstance(node.args[0], ast.Constant) and isinstance(
                node.args[0].value, str):
            path = node.args[0].value
            if path.endswith(".py") and len(node.args) > 1 and "w" in str(getattr(node.args[1], "value", "")):
                self.flag(node, f"writes a Python module `{path}` (can shadow what the tests import)")
            if path.startswith(("..", "/")) and not path.startswith(("/tmp", "/dev/null")):
                self.flag(node, f"opens `{path}`, outside the student's folder")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and any(word in node.value for word in _GRADER_PATHS):
            self.flag(node, "refers to the grader's files (solutions, course or gradebook)")
        if isinstance(node.value, str) and any(word in node.value for word in _STARTUP_PATHS):
            self.flag(node, "refers to a file the kernel runs at start-up (IPython startup, usercustomize)")

    def visit_keyword(self, node: ast.keyword) -> None:
        if node.arg in ("start_new_session", "preexec_fn", "process_group") and not (
                isinstance(node.value, ast.Constant) and node.value.value in (False, None)):
            self.flag(node.value, f"starts a detached process (`{node.arg}=`) that could outlive the kernel")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in ("f_back", "f_globals", "f_locals", "tb_frame", "gi_frame", "__subclasses__",
                         "__globals__", "__code__", "__closure__", "pythonapi"):
            self.flag(node, f"reads `{node.attr}` (reaches into other code's frames or functions)")
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            base = _dotted(node.value)
            if base in ("sys.modules", "__builtins__", "builtins.__dict__", "globals()", "vars(builtins)"):
                key = node.slice.value if isinstance(node.slice, ast.Constant) else "..."
                self.flag(node, f"rewrites `{base}[{key!r}]`")
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        for name in node.names:
            if name in _GUARDED_BUILTINS:
                self.flag(node, f"declares the builtin `{name}` global to rebind it")
        self.generic_visit(node)


def shadowed_module(filename: str) -> str | None:
    """The module a shipped file would shadow (e.g. 'numpy.py' -> 'numpy'), or None when it shadows nothing."""
    stem = filename.rsplit("/", 1)[-1]
    for suffix in (".py", ".pyc", ".so", ".pth"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    else:
        return None
    return stem if stem in _SHADOWED_MODULES or filename.endswith(".pth") else None
