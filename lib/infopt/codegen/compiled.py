"""A compiled kernel: JIT-compiled machine code called on numpy arrays through ctypes, without copies.

``compile_kernel`` verifies, emits, optimizes and JITs a kernel. ``compile_tuned`` does the same asking
LLVM for a chosen SIMD width (the host's widest by default) and widening ``vectorize(..., explicit=True)``
loops itself (``infopt.codegen.vector_emit``): register-blocked micro-kernels need 512-bit vectors on
AVX-512 hosts, which LLVM does not pick on its own. A kernel with accesses the bounds prover left
unproven runs with their checks and raises ``OutOfBoundsError`` instead of touching memory outside a buffer.
"""
from __future__ import annotations

import ctypes
from typing import Any, Sequence

import numpy as np

from ..grading import guards
from ..grading.errors import HarnessError
from ..ir.types import DTYPES
from .emit import LLVMEmitter, parallel_loop
from .expr import KernelError
from .kernel_ir import Kernel
from .kernel_verify import check_kernel
from .llvm_jit import JitModule, emit_asm, host_vector_bits, jit, with_vector_width
from .vector_emit import VectorEmitter


class CompiledKernel:
    """A kernel compiled for the host: call it with one numpy array per non-temp buffer (in kernel order).

    The arrays are passed by pointer (no copies); each must match its buffer's shape and dtype, be
    C-contiguous, and outputs must be writeable and not overlap other arguments. Temp buffers are
    allocated per call. ``threads`` splits a top-level ``parallel`` loop across threads
    (ctypes releases the GIL during the call). ``vector_bits`` asks LLVM for vectors of that width and
    widens explicit vector loops (see ``compile_tuned``).
    """

    def __init__(self, kernel: Kernel, opt: int = 3, passes: Sequence[str] | None = None,
                 vector_bits: int | None = None, **pipeline: bool) -> None:
        self.kernel = kernel
        self.bounds = check_kernel(kernel)
        self.vector_bits = vector_bits
        if vector_bits is None:
            self.ir = LLVMEmitter(kernel, self.bounds).run()
        else:
            self.ir = with_vector_width(VectorEmitter(kernel, self.bounds).run(), kernel.name, vector_bits)
        self.par = parallel_loop(kernel)
        self.user_buffers = [b for b in kernel.buffers if b.role != "temp"]
        self._runner = guards.native_runner()
        if self._runner is not None:   # in the grader's judge: compiled and run in a sandbox (autograder/README.md)
            self._options = {"opt": opt, "passes": passes, "vector_bits": vector_bits, **pipeline}
            return
        self.jit: JitModule = jit(self.ir, opt, passes, **pipeline)
        argtypes = [ctypes.c_void_p] * len(kernel.buffers)
        if self.par is not None:
            argtypes += [ctypes.c_int64, ctypes.c_int64]
        if self.checked:
            argtypes.append(ctypes.c_void_p)
        self.cfunc = self.jit.cfunc(kernel.name, None, *argtypes)

    @property
    def checked(self) -> bool:
        """Whether some access runs with a bounds check (the function then takes a report pointer last)."""
        return bool(self.bounds.unproven)

    @property
    def optimized_ir(self) -> str:
        """The LLVM IR after optimization."""
        return self._jitted().ir

    def asm(self) -> str:
        """The host assembly of the optimized kernel."""
        return emit_asm(self._jitted().ir)

    def _jitted(self) -> JitModule:
        if self._runner is not None:
            raise HarnessError("the grader's judge does not JIT: a test may run a compiled kernel (in a sandbox), "
                               "not read its machine code")
        return self.jit

    def _check(self, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        k = self.kernel
        if len(arrays) == len(k.buffers):
            bufs = list(k.buffers)
        elif len(arrays) == len(self.user_buffers):
            bufs = self.user_buffers
        else:
            raise TypeError(f"kernel {k.name} takes {len(self.user_buffers)} arrays "
                            f"({', '.join(b.name for b in self.user_buffers)}), got {len(arrays)}")
        for b, a in zip(bufs, arrays):
            if not isinstance(a, np.ndarray):
                raise TypeError(f"kernel {k.name}: argument {b.name} must be a numpy array, got {type(a).__name__}")
            if a.dtype != DTYPES[b.dtype] or a.shape != b.shape:
                raise ValueError(f"kernel {k.name}: argument {b.name} must be {b.dtype}{list(b.shape)}, "
                                 f"got {a.dtype}{list(a.shape)}")
            if not a.flags.c_contiguous:
                raise ValueError(f"kernel {k.name}: argument {b.name} must be C-contiguous; pass np.ascontiguousarray(x)")
            if b.role in ("out", "inout") and not a.flags.writeable:
                raise ValueError(f"kernel {k.name}: output {b.name} is read-only")
        for i, (b, a) in enumerate(zip(bufs, arrays)):
            if b.role in ("out", "inout"):
                for j, c in enumerate(arrays):
                    if j != i and np.may_share_memory(a, c):
                        raise ValueError(f"kernel {k.name}: output {b.name} overlaps argument {bufs[j].name}; "
                                         "kernels assume buffers do not alias (noalias)")
        return list(arrays)

    def __call__(self, *arrays: np.ndarray, threads: int = 1) -> None:
        """Run the kernel in place on the given arrays."""
        arrays = self._check(arrays)
        if self._runner is not None:   # the arrays come back changed in place
            self._runner.library("infopt.codegen.compiled:run_in_place", (self.kernel, list(arrays)),
                                 {"threads": threads, **self._options})
            return
        full = len(arrays) == len(self.kernel.buffers)
        keep: list[np.ndarray] = []

        def ptrs() -> list[int]:
            it = iter(arrays)
            out = []
            for b in self.kernel.buffers:
                a = next(it) if (full or b.role != "temp") else np.empty(b.shape, DTYPES[b.dtype])
                out.append(a.ctypes.data)
                if not full and b.role == "temp":
                    keep.append(a)
            return out

        records: list[np.ndarray] = []

        def report() -> list[int]:
            if not self.checked:
                return []
            rec = np.zeros(self.bounds.record_size, np.int64)
            records.append(rec)
            return [rec.ctypes.data]

        if self.par is None:
            self.cfunc(*ptrs(), *report())
        else:
            lo, step, n = int(self.par.start.value), self.par.step, self.par.extent or 0
            chunks = max(1, min(int(threads), n))
            bounds = [lo + step * (n * c // chunks) for c in range(chunks + 1)]
            if chunks == 1:
                self.cfunc(*ptrs(), bounds[0], bounds[1], *report())
            else:
                from concurrent.futures import ThreadPoolExecutor

                jobs = [(ptrs(), bounds[c], bounds[c + 1], report()) for c in range(chunks)]
                with ThreadPoolExecutor(chunks) as pool:
                    list(pool.map(lambda j: self.cfunc(*j[0], j[1], j[2], *j[3]), jobs))
        for rec in records:
            if rec[0]:
                raise self.bounds.runtime_error(rec)

    def run(self, *inputs: np.ndarray, threads: int = 1) -> list[np.ndarray]:
        """Allocate the outputs, run on the inputs (the 'in'/'inout' buffers, in order), return the outputs."""
        k = self.kernel
        ins = [b for b in self.user_buffers if b.role in ("in", "inout")]
        if len(inputs) != len(ins):
            raise TypeError(f"kernel {k.name} reads {len(ins)} arrays ({', '.join(b.name for b in ins)}), got {len(inputs)}")
        given = {b.name: np.require(a, DTYPES[b.dtype], "C") for b, a in zip(ins, inputs)}
        for b in ins:
            if b.role == "inout":
                given[b.name] = given[b.name].copy()
        args = [given[b.name] if b.name in given else np.zeros(b.shape, DTYPES[b.dtype]) for b in self.user_buffers]
        self(*args, threads=threads)
        return [a for b, a in zip(self.user_buffers, args) if b.role in ("out", "inout")]


def run_in_place(kernel: Kernel, arrays: list[np.ndarray], threads: int = 1, **options: Any) -> None:
    """Compile `kernel` and run it on `arrays` in place: what the grader's judge asks its sandboxed runner to do."""
    CompiledKernel(kernel, **options)(*arrays, threads=threads)


def compile_kernel(kernel: Kernel, opt: int = 3, passes: Sequence[str] | None = None, **pipeline: bool) -> CompiledKernel:
    """Verify, emit, optimize and JIT a kernel (cached by its LLVM IR text and the options)."""
    if not isinstance(kernel, Kernel):
        raise KernelError(f"compile_kernel needs a Kernel, got {type(kernel).__name__}")
    return CompiledKernel(kernel, opt, passes, **pipeline)


def compile_tuned(kernel: Kernel, bits: int | None = None, loop_vectorize: bool = True) -> CompiledKernel:
    """Compile ``kernel`` preferring ``bits``-wide vectors (default: the host's widest); explicit vector loops widened.

    ``loop_vectorize=False`` switches LLVM's loop vectorizer off (it would otherwise vectorize a micro-kernel's
    reduction loop instead of its register tile, which the SLP vectorizer packs into FMAs).
    """
    if not isinstance(kernel, Kernel):
        raise KernelError(f"compile_tuned needs a Kernel, got {type(kernel).__name__}")
    if bits is not None and bits not in (128, 256, 512):
        raise KernelError(f"bits must be 128, 256 or 512, got {bits}")
    return CompiledKernel(kernel, 3, None, vector_bits=int(bits or host_vector_bits()), loop_vectorize=loop_vectorize)
