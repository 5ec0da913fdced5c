"""Unit 03 (and 06): the loop-nest kernel IR, lowerings from graph nodes, the llvmlite backend, IR analyses.

Importing this package is cheap: llvmlite is imported when something is emitted or compiled.
"""
from .kernel_ir import (
    Assign, BitCast, Bin, Buffer, Call, Cast, Cmp, Const, Expr, If, Kernel, KernelError, Load, Loop, Select, Stmt,
    Store, Var, as_expr, call, cmp, loop, maximum, minimum, select,
)
from .printer import kernel_text
from .verify import verify_kernel

__all__ = [
    "Assign", "BitCast", "Bin", "Buffer", "Call", "Cast", "Cmp", "Const", "Expr", "If", "Kernel", "KernelError",
    "Load", "Loop", "Select", "Stmt", "Store", "Var", "as_expr", "call", "cmp", "loop", "maximum", "minimum",
    "select", "kernel_text", "verify_kernel",
]
