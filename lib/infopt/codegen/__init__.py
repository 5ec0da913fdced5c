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


def __getattr__(name: str):
    """Lazy access to the heavier parts (they import llvmlite when used)."""
    lazy = {
        "compile": ("graph_compile", "compile_graph"), "compile_graph": ("graph_compile", "compile_graph"),
        "CompiledGraph": ("graph_compile", "CompiledGraph"), "lower_node": ("graph_compile", "lower_node"),
        "compile_kernel": ("compiled", "compile_kernel"), "CompiledKernel": ("compiled", "CompiledKernel"),
        "emit_llvm": ("emit", "emit_llvm"), "optimize": ("llvm_jit", "optimize"), "jit": ("llvm_jit", "jit"),
        "host_info": ("llvm_jit", "host_info"), "emit_asm": ("llvm_jit", "emit_asm"),
        "has_target": ("llvm_jit", "has_target"), "LLVMError": ("llvm_jit", "LLVMError"),
        "fuse_elementwise_chain": ("lower_elementwise", "fuse_elementwise_chain"),
        "UnsupportedLoweringError": ("lower_elementwise", "UnsupportedLoweringError"),
        "softmax_kernel": ("lower_elementwise", "softmax_kernel"), "exp_stmts": ("mathfns", "exp_stmts"),
        "count_fmas": ("analysis", "count_fmas"), "instruction_mix": ("analysis", "instruction_mix"),
        "count_memory": ("analysis", "count_memory"), "vectorization": ("analysis", "vectorization"),
        "flop_estimate": ("analysis", "flop_estimate"),
    }
    if name in lazy:
        import importlib

        mod, attr = lazy[name]
        return getattr(importlib.import_module(f"{__name__}.{mod}"), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
