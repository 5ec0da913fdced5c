"""The text form of the kernel IR: C-like loops, one statement per line, for reading and diffing."""
from __future__ import annotations

from .kernel_ir import Assign, Bin, BitCast, Call, Cast, Cmp, Const, Expr, If, Kernel, Load, Loop, Select, Stmt, Store, Var

_PREC = {"max": 9, "min": 9, "*": 5, "/": 5, "//": 5, "%": 5, "+": 4, "-": 4}


def expr_text(e: Expr, parent: int = 0) -> str:
    """One expression as text, with only the parentheses precedence needs."""
    if isinstance(e, Const):
        if e.dtype == "bool":
            return "true" if e.value else "false"
        if e.dtype in ("f32", "f64"):
            return repr(float(e.value)) + ("" if e.dtype == "f32" else "d")
        return str(e.value)
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Load):
        return f"{e.buffer.name}[{', '.join(expr_text(i) for i in e.indices)}]"
    if isinstance(e, Bin):
        if e.op in ("max", "min"):
            return f"{e.op}({expr_text(e.a)}, {expr_text(e.b)})"
        p = _PREC[e.op]
        s = f"{expr_text(e.a, p)} {e.op} {expr_text(e.b, p + 1)}"
        return f"({s})" if p < parent else s
    if isinstance(e, Cmp):
        s = f"{expr_text(e.a, 3)} {e.op} {expr_text(e.b, 3)}"
        return f"({s})" if parent > 2 else s
    if isinstance(e, Select):
        return f"select({expr_text(e.cond)}, {expr_text(e.a)}, {expr_text(e.b)})"
    if isinstance(e, Call):
        return f"{e.fn}({', '.join(expr_text(a) for a in e.args)})"
    if isinstance(e, Cast):
        return f"{e.to}({expr_text(e.a)})"
    if isinstance(e, BitCast):
        return f"bitcast<{e.to}>({expr_text(e.a)})"
    return repr(e)


def stmt_text(s: Stmt, depth: int) -> list[str]:
    """One statement as indented lines."""
    pad = "  " * depth
    if isinstance(s, Store):
        return [f"{pad}{s.buffer.name}[{', '.join(expr_text(i) for i in s.indices)}] = {expr_text(s.value)}"]
    if isinstance(s, Assign):
        return [f"{pad}{s.var.name}: {s.var.dtype} = {expr_text(s.value)}"]
    if isinstance(s, Loop):
        step = f" step {s.step}" if s.step != 1 else ""
        kind = f" {s.kind}" if s.kind != "serial" else ""
        ann = "".join(f" {k}={v}" for k, v in s.annotations)
        head = f"{pad}for {s.var.name} in {expr_text(s.start)}..{expr_text(s.stop)}{step}{kind}{ann} {{"
        return [head] + [ln for b in s.body for ln in stmt_text(b, depth + 1)] + [pad + "}"]
    if isinstance(s, If):
        lines = [f"{pad}if {expr_text(s.cond)} {{"] + [ln for b in s.then for ln in stmt_text(b, depth + 1)]
        if s.orelse:
            lines += [pad + "} else {"] + [ln for b in s.orelse for ln in stmt_text(b, depth + 1)]
        return lines + [pad + "}"]
    return [pad + repr(s)]


def kernel_text(k: Kernel) -> str:
    """A whole kernel as text: signature, then the loop nest."""
    args = ", ".join(str(b) for b in k.buffers)
    fm = " fastmath" if k.fastmath else ""
    lines = [f"kernel {k.name}({args}){fm} {{"] + [ln for s in k.body for ln in stmt_text(s, 1)] + ["}"]
    return "\n".join(lines)
