"""Unit 03: the loop-nest kernel IR with its one generic walk, lowerings from graph nodes, the llvmlite backend,
IR analyses, and the bounds prover every kernel passes before it is compiled.

Importing this package is cheap: llvmlite is imported when something is emitted or compiled. Unit 06's
schedules, traces and cache models over this IR are in ``infopt.schedule``.
"""
from .bounds import OutOfBoundsError, prove_bounds
from .expr import (
    BitCast, Bin, Buffer, Call, Cast, Cmp, Const, Expr, KernelError, Load, Select, Var, as_expr, call, cmp, maximum,
    minimum, select,
)
from .kernel_ir import Assign, If, Kernel, Loop, Stmt, Store, loop
from .kernel_verify import verify_kernel

__all__ = [
    "Assign", "BitCast", "Bin", "Buffer", "Call", "Cast", "Cmp", "Const", "Expr", "If", "Kernel", "KernelError",
    "Load", "Loop", "OutOfBoundsError", "Select", "Stmt", "Store", "Var", "as_expr", "call", "cmp", "loop", "maximum",
    "minimum", "prove_bounds", "select", "verify_kernel",
]


def __getattr__(name: str):
    """Lazy access to the heavier parts (they import llvmlite when used)."""
    lazy = {
        "compile": ("graph_compile", "compile_graph"), "compile_graph": ("graph_compile", "compile_graph"),
        "CompiledGraph": ("graph_compile", "CompiledGraph"), "lower_node": ("graph_compile", "lower_node"),
        "compile_kernel": ("compiled", "compile_kernel"), "CompiledKernel": ("compiled", "CompiledKernel"),
        "compile_tuned": ("compiled", "compile_tuned"),
        "emit_llvm": ("emit", "emit_llvm"), "optimize": ("llvm_jit", "optimize"), "jit": ("llvm_jit", "jit"),
        "host_info": ("llvm_jit", "host_info"), "emit_asm": ("llvm_jit", "emit_asm"),
        "has_target": ("llvm_jit", "has_target"), "LLVMError": ("llvm_jit", "LLVMError"),
        "host_vector_bits": ("llvm_jit", "host_vector_bits"),
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
