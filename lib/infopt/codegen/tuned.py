"""Compile a kernel with a chosen SIMD width: the host's register shape for micro-kernels (AVX2 vs AVX-512).

LLVM on recent x86 cores prefers 256-bit vectors even when AVX-512 is present; a register-blocked
micro-kernel written for 512-bit registers then runs at half speed. ``compile_tuned`` marks the
kernel's function ``"prefer-vector-width"="<bits>"`` so the SLP vectorizer packs the unrolled scalar
accumulators into ``<bits/32 x float>`` FMAs, and can switch the loop vectorizer off (it would
otherwise vectorize the reduction loop, not the register tile). Loops scheduled with
``vectorize(..., explicit=True)`` are widened to LLVM vector types by ``vector_emit``.
"""
from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass

from .compiled import CompiledKernel
from .emit import parallel_loop
from .kernel_ir import Kernel, KernelError
from .llvm_jit import host_info, jit


@dataclass(frozen=True)
class RegisterShape:
    """The micro-kernel's register tile: ``mr`` rows of A times ``nr`` columns of B, in ``bits``-wide vectors."""

    mr: int
    nr: int
    bits: int

    @property
    def lanes(self) -> int:
        """float32 lanes per vector register."""
        return self.bits // 32


def host_vector_bits() -> int:
    """The widest float SIMD register of this host (512 with AVX-512F, 256 with AVX2/AVX, else 128)."""
    feats = host_info().vector_features
    if "avx512f" in feats:
        return 512
    if "avx2" in feats or "avx" in feats:
        return 256
    return 128


def host_register_shape() -> RegisterShape:
    """A register tile that fits this host: 8x32 on AVX-512 (32 zmm), 6x16 on AVX2 (16 ymm), 4x8 otherwise."""
    bits = host_vector_bits()
    return {512: RegisterShape(8, 32, 512), 256: RegisterShape(6, 16, 256)}.get(bits, RegisterShape(4, 8, 128))


def with_vector_width(ir_text: str, name: str, bits: int) -> str:
    """LLVM IR text with function ``name`` asking for ``bits``-wide vectors."""
    pat = re.compile(r'^(define void @"?' + re.escape(name) + r'"?\([^\n]*\))', re.M)
    if not pat.search(ir_text):
        raise KernelError(f"function {name} not found in the IR")
    text = pat.sub(r"\1 #900", ir_text, count=1)
    return text + f'\nattributes #900 = {{ "prefer-vector-width"="{bits}" "min-legal-vector-width"="{bits}" }}\n'


class TunedKernel(CompiledKernel):
    """A ``CompiledKernel`` whose function prefers ``bits``-wide vectors (same calling convention)."""

    def __init__(self, kernel: Kernel, bits: int | None = None, loop_vectorize: bool = True, opt: int = 3) -> None:
        from .vector_emit import emit_vector_llvm

        self.kernel = kernel
        self.bits = int(bits or host_vector_bits())
        self.ir = with_vector_width(emit_vector_llvm(kernel), kernel.name, self.bits)
        self.jit = jit(self.ir, opt, None, loop_vectorize=loop_vectorize)
        self.par = parallel_loop(kernel)
        argtypes = [ctypes.c_void_p] * len(kernel.buffers)
        if self.par is not None:
            argtypes += [ctypes.c_int64, ctypes.c_int64]
        self.cfunc = self.jit.cfunc(kernel.name, None, *argtypes)
        self.user_buffers = [b for b in kernel.buffers if b.role != "temp"]


def compile_tuned(kernel: Kernel, bits: int | None = None, loop_vectorize: bool = True) -> TunedKernel:
    """Compile ``kernel`` preferring ``bits``-wide vectors (default: the host's widest); explicit vector loops widened."""
    if bits is not None and bits not in (128, 256, 512):
        raise KernelError(f"bits must be 128, 256 or 512, got {bits}")
    return TunedKernel(kernel, bits, loop_vectorize)
