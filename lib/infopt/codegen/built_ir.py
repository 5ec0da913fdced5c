"""What a student's llvmlite IR builder made, as plain data, and that IR run: what unit 03's `build_dot` test checks.

llvmlite's objects do not cross between the grader's judge and the student's kernel, and the judge makes no native
code. So the builder runs where the student's code is (`build_into_module`: in the kernel at grading, through the
test's one call), and what it made comes back as the module's text and its function's signature; parsing that text
and running it (`instructions`, `run_float_function`) happen in the judge's native runner, a sandboxed room that
holds no student code (infopt.grading.guards.native_runner). In the notebook everything runs in place.
"""
from __future__ import annotations

import ctypes
from typing import Any, Callable

import numpy as np

from ..grading import guards


def build_into_module(build: Callable[[Any], Any], module_name: str) -> dict:
    """Call `build(module)` on a fresh `ir.Module`; what it returned and the module, as data: {"returned" (type
    name), "function" (True for an ir.Function), "same_module", "name", "return_type", "arg_types", "text"}."""
    if getattr(build, "__infopt_remote__", False):   # at grading: the student's function runs in their kernel
        return build.via("infopt.codegen.built_ir:build_into_module", module_name)
    from llvmlite import ir

    module = ir.Module(name=module_name)
    fn = build(module)
    made = {"returned": type(fn).__name__, "function": isinstance(fn, ir.Function), "text": str(module)}
    if isinstance(fn, ir.Function):
        made.update(same_module=fn.module is module, name=fn.name, return_type=str(fn.ftype.return_type),
                    arg_types=[str(t) for t in fn.ftype.args])
    return made


def instructions(text: str, function: str) -> list[tuple[str, str]]:
    """(opcode, result type) of every instruction of `function` in the LLVM IR `text` (ValueError if it does not
    parse or has no such function)."""
    runner = guards.native_runner()
    if runner is not None:
        return [tuple(i) for i in runner.library("infopt.codegen.built_ir:instructions", (text, function), {})]
    import llvmlite.binding as llvm

    try:
        fn = llvm.parse_assembly(text).get_function(function)
    except (RuntimeError, NameError) as err:
        raise ValueError(f"the module's IR does not parse or has no function {function!r}: {err}") from None
    return [(i.opcode, str(i.type)) for block in fn.blocks for i in block.instructions]


def run_float_function(text: str, function: str, a: np.ndarray, b: np.ndarray, n: int, opt: int = 0) -> float:
    """JIT `text` at `opt` and call `float function(float* a, float* b, int64 n)` on the data of `a` and `b`.

    `a` and `b` may be views into bigger buffers (a test fences them with values that must not be read): the whole
    buffer travels, and the pointer is the view's place in it."""
    runner = guards.native_runner()
    if runner is not None:
        return float(runner.library("infopt.codegen.built_ir:run_in_buffers",
                                    (text, function, *_in_buffer(a), *_in_buffer(b), int(n), int(opt)), {}))
    return run_in_buffers(text, function, *_in_buffer(a), *_in_buffer(b), int(n), int(opt))


def _in_buffer(view: np.ndarray) -> tuple[np.ndarray, int]:
    """(the contiguous float32 buffer `view` lies in, the view's element offset in it)."""
    if view.dtype != np.float32 or not view.flags.c_contiguous or view.ndim != 1:
        raise ValueError("expected a contiguous 1-D float32 array")
    base = view.base if isinstance(view.base, np.ndarray) and view.base.ndim == 1 and view.base.dtype == np.float32 \
        and view.base.flags.c_contiguous else view
    offset = (view.ctypes.data - base.ctypes.data) // view.itemsize
    if not 0 <= offset <= len(base) - len(view):
        base, offset = view, 0
    return base, int(offset)


def run_in_buffers(text: str, function: str, a: np.ndarray, a_at: int, b: np.ndarray, b_at: int, n: int,
                   opt: int = 0) -> float:
    """`run_float_function` on pointers `a_at` and `b_at` elements into the buffers `a` and `b` (native: runs
    where native code may, never in the judge)."""
    from .llvm_jit import jit

    for buffer, at in ((a, a_at), (b, b_at)):
        if buffer.dtype != np.float32 or buffer.ndim != 1 or not 0 <= at <= len(buffer):
            raise ValueError("expected 1-D float32 buffers and offsets inside them")
    fn = jit(text, opt=opt).cfunc(function, ctypes.c_float, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return float(fn(a.ctypes.data + 4 * a_at, b.ctypes.data + 4 * b_at, int(n)))
