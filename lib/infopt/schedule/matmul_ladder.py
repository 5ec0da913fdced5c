"""The matmul ladder: C = A @ B (float32) from a naive loop nest up to packed panels and a register-blocked micro-kernel.

Every rung is a kernel-IR ``Kernel`` built with ``infopt.schedule``'s primitives and correct on any M, N, K
(sizes need not be multiples of any tile):

- ``naive``: i-j-k, the textbook order (B walked down a column: one cache line per multiply-add).
- ``interchanged``: i-k-j (``reorder``), the inner loop streams rows of B and C and vectorizes.
- ``tiled``: two levels of ``split`` + ``reorder``: outer tiles sized for L2, inner tiles for L1.
- ``packed``: the BLIS loop nest jc > pc > ic > jr > ir > k. Inside pc, a ``kc x nc`` block of B is
  copied into zero-padded ``nr``-column panels (k-major, contiguous; it stays in L2); inside ic, an
  ``mc x kc`` block of A into ``mr``-row panels (L1/L2). A register-blocked micro-kernel keeps
  ``mr x nr`` accumulators in registers across the k loop: per k, ``mr`` broadcasts of A and
  ``nr/lanes`` vector loads of B feed one FMA per accumulator vector; the first k block overwrites C,
  later ones add to it. The accumulators are unrolled scalars; LLVM's SLP vectorizer turns each row
  of ``nr`` into ``<lanes x float>`` FMAs (``compile_tuned`` asks for the host's widest vectors:
  8x32 in zmm registers with AVX-512, 6x16 in ymm with AVX2).
- ``packed_mt``: the same with the M dimension cut into slabs, one per thread: the kernel's only
  top-level loop is ``parallel`` (the compiled function takes a slab range), and ``MatmulRung``
  calls it once per slab: the calling thread takes the first slab, a persistent thread pool the
  others (ctypes releases the GIL during each call); every thread packs into its own temp panels.
  Thread hand-off costs tens of microseconds on an idle machine and milliseconds when another job
  holds a core, so two threads pay off only for large problems (N >= 512 here).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..codegen.expr import Buffer, Const, Expr, Var, cmp, minimum, select
from ..codegen.kernel_ir import Assign, If, Kernel, Loop, Stmt, Store, loop
from ..codegen.llvm_jit import host_vector_bits
from .loop_primitives import reorder, split, vectorize

RUNGS = ("naive", "interchanged", "tiled", "packed", "packed_mt")


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


def host_register_shape() -> RegisterShape:
    """A register tile that fits this host: 8x32 on AVX-512 (32 zmm), 6x16 on AVX2 (16 ymm), 4x8 otherwise."""
    bits = host_vector_bits()
    return {512: RegisterShape(8, 32, 512), 256: RegisterShape(6, 16, 256)}.get(bits, RegisterShape(4, 8, 128))


def _bufs(M: int, N: int, K: int) -> tuple[Buffer, Buffer, Buffer]:
    return Buffer("A", (M, K)), Buffer("B", (K, N)), Buffer("C", (M, N), role="out")


def _check_sizes(M: int, N: int, K: int) -> None:
    for n, v in (("M", M), ("N", N), ("K", K)):
        if not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"matmul size {n} must be a positive int, got {v!r}")


def naive(M: int, N: int, K: int) -> Kernel:
    """``C = 0; for i, j, k: C[i,j] += A[i,k] * B[k,j]`` in the textbook i-j-k order."""
    _check_sizes(M, N, K)
    A, B, C = _bufs(M, N, K)
    i, j, k = Var("i"), Var("j"), Var("k")
    zero = loop("zi", M, body=loop("zj", N, body=Store(C, (Var("zi"), Var("zj")), 0.0)))
    nest = loop("i", M, body=loop("j", N, body=loop("k", K, body=Store(C, (i, j), C[i, j] + A[i, k] * B[k, j]))))
    return Kernel(f"mm_naive_{M}x{N}x{K}", (A, B, C), (zero, nest))


def interchanged(M: int, N: int, K: int) -> Kernel:
    """The naive nest reordered to i-k-j with the j loop vectorized (rows of B and C are contiguous)."""
    k = reorder(naive(M, N, K), ["i", "k", "j"])
    k = vectorize(k, "j")
    return Kernel(f"mm_ikj_{M}x{N}x{K}", k.buffers, k.body)


def tiled(M: int, N: int, K: int, l2: tuple[int, int, int] = (128, 256, 128),
          l1: tuple[int, int, int] = (32, 64, 64)) -> Kernel:
    """Two-level tiling of the i-k-j nest: (mi, nj, kk) tiles of ``l2`` for L2, inside them tiles of ``l1`` for L1."""
    (m2, n2, k2), (m1, n1, k1) = l2, l1
    k = reorder(naive(M, N, K), ["i", "k", "j"])
    k = split(k, "i", m2, "io", "i1")
    k = split(k, "k", k2, "ko", "k1")
    k = split(k, "j", n2, "jo", "j1")
    k = split(k, "i1", m1, "im", "ii")
    k = split(k, "k1", k1, "km", "ki")
    k = split(k, "j1", n1, "jm", "ji")
    k = reorder(k, ["io", "ko", "jo", "im", "km", "jm", "ii", "ki", "ji"])
    k = vectorize(k, "ji")
    return Kernel(f"mm_tiled_{M}x{N}x{K}", k.buffers, k.body)


def tiled_order(M: int, N: int, K: int, tiles: tuple[int, int, int] = (16, 16, 16), order: str = "ijk",
                inner: str = "ikj") -> Kernel:
    """One level of (ti, tj, tk) tiles with the tile loops in ``order`` and the loops inside a tile in ``inner``."""
    for o in (order, inner):
        if sorted(o) != ["i", "j", "k"]:
            raise ValueError(f"loop order {o!r} must be a permutation of 'ijk'")
    ti, tj, tk = tiles
    k = split(split(split(naive(M, N, K), "i", ti), "j", tj), "k", tk)
    k = reorder(k, [f"{v}o" for v in order] + [f"{v}i" for v in inner])
    return Kernel(f"mm_tiled_{order}_{ti}x{tj}x{tk}_{M}x{N}x{K}", k.buffers, k.body)


def _ceil_to(x: int, m: int) -> int:
    return -(-x // m) * m


def packed(M: int, N: int, K: int, shape: RegisterShape | None = None, kc: int = 256, mc: int | None = None,
           nc: int = 1024, slabs: int = 1) -> Kernel:
    """Packed A/B panels + a ``shape.mr x shape.nr`` register-blocked micro-kernel; ``slabs > 1`` adds a parallel M loop."""
    _check_sizes(M, N, K)
    rs = shape or host_register_shape()
    MR, NR = rs.mr, rs.nr
    MC = mc or 12 * MR
    if MC % MR or nc % NR:
        raise ValueError(f"mc ({MC}) must be a multiple of mr ({MR}) and nc ({nc}) of nr ({NR})")
    slabs = max(1, min(int(slabs), -(-M // MR)))
    Ms = _ceil_to(-(-M // slabs), MR)           # rows per slab, a multiple of MR
    slabs = -(-M // Ms)
    Np = _ceil_to(N, NR)
    NC = min(nc, Np)
    KC = min(kc, K)
    A, B, C = _bufs(M, N, K)
    Ap = Buffer("Ap", (MC // MR, KC, MR), role="temp")      # one mc x kc block of A, in mr-row panels
    Bp = Buffer("Bp", (NC // NR, KC, NR), role="temp")      # one kc x nc block of B, in nr-column panels
    s = Var("s")
    row0: Expr = s * Ms if slabs > 1 else Const(0, "i64")
    jc, pc, ic, jr, ir, k, p, kk, r, c = (Var(n) for n in ("jc", "pc", "ic", "jr", "ir", "k", "p", "kk", "r", "c"))
    ok_row = lambda e: cmp("<", e, M)  # noqa: E731
    kend = minimum(pc + KC, K)
    # pack the kc x nc block of B at (pc, jc): panel p holds columns jc + p*NR .. +NR, zero-padded past N
    b_col = jc + p * NR + c
    b_val: Expr = B[kk, b_col] if N % NR == 0 else select(cmp("<", b_col, N), B[kk, minimum(b_col, N - 1)], 0.0)
    pack_b = loop("p", 0, (minimum(jc + NC, Np) - jc) // NR, body=loop("kk", pc, kend, body=loop(
        "c", NR, body=Store(Bp, (p, kk - pc, c), b_val))))
    # pack the mc x kc block of A at (ic, pc): panel p holds rows ic + p*MR .. +MR, zero-padded past the slab / M
    a_row = row0 + ic + p * MR + r
    exact_a = slabs == 1 and M % MR == 0
    a_val: Expr = A[a_row, kk] if exact_a else select(ok_row(a_row), A[minimum(a_row, M - 1), kk], 0.0)
    pack_a = loop("p", 0, (minimum(ic + MC, Ms) - ic) // MR, body=loop("kk", pc, kend, body=loop(
        "r", MR, kind="unroll", body=Store(Ap, (p, kk - pc, r), a_val))))
    acc = [[Var(f"acc{a}_{b}", "f32") for b in range(NR)] for a in range(MR)]
    init = [Assign(acc[a][b], 0.0) for a in range(MR) for b in range(NR)]
    upd = [Assign(acc[a][b], acc[a][b] + Ap[(ir - ic) // MR, k - pc, a] * Bp[(jr - jc) // NR, k - pc, b])
           for a in range(MR) for b in range(NR)]
    guard_m, guard_n = not exact_a, N % NR != 0

    first = cmp("==", pc, 0)                   # the first k block overwrites C (no separate zeroing pass)
    store: list[Stmt] = []
    for a in range(MR):
        row = []
        for b in range(NR):
            idx = (row0 + ir + a, jr + b)
            st = Store(C, idx, select(first, 0.0, C[idx]) + acc[a][b])
            row.append(If(cmp("<", jr + b, N), [st]) if guard_n else st)
        store += [If(ok_row(row0 + ir + a), row)] if guard_m else row
    micro = loop("ir", ic, minimum(ic + MC, Ms), step=MR, body=init + [loop("k", pc, kend, body=upd)] + store)
    body: list[Stmt] = [loop("jc", 0, Np, step=NC, body=loop("pc", 0, K, step=KC, body=[
        pack_b, loop("ic", 0, Ms, step=MC, body=[pack_a, loop("jr", jc, minimum(jc + NC, Np), step=NR, body=micro)])]))]
    name = f"mm_packed{'_mt' if slabs > 1 else ''}_{M}x{N}x{K}"
    if slabs > 1:
        return Kernel(name, (A, B, C, Ap, Bp), (Loop(s, Const(0, "i64"), Const(slabs, "i64"), 1, tuple(body),
                                                     "parallel"),), fastmath=True)
    return Kernel(name, (A, B, C, Ap, Bp), tuple(body), fastmath=True)


def packed_mt(M: int, N: int, K: int, threads: int = 2, **kw) -> Kernel:
    """``packed`` with M cut into ``threads`` slabs under a parallel loop (call with ``threads=``)."""
    return packed(M, N, K, slabs=threads, **kw)


BUILDERS: dict[str, Callable[..., Kernel]] = {"naive": naive, "interchanged": interchanged, "tiled": tiled,
                                              "packed": packed, "packed_mt": packed_mt}


class MatmulRung:
    """One compiled rung of the ladder for fixed (M, N, K): ``rung(a, b)`` returns ``a @ b``."""

    def __init__(self, name: str, M: int, N: int, K: int, threads: int = 1, **kw) -> None:
        if name not in BUILDERS:
            raise ValueError(f"unknown matmul schedule {name!r}; choose one of {RUNGS}")
        self.name, self.shape = name, (M, N, K)
        self.threads = threads if name == "packed_mt" else 1
        self.kernel = BUILDERS[name](M, N, K, **({"threads": threads} if name == "packed_mt" else {}), **kw)
        if name.startswith("packed"):
            from ..codegen.compiled import compile_tuned

            self.compiled = compile_tuned(self.kernel, loop_vectorize=False)
        else:
            from ..codegen.compiled import compile_kernel

            self.compiled = compile_kernel(self.kernel)
        self._temps = [np.empty(b.shape, np.float32) for b in self.kernel.buffers if b.role == "temp"]
        par = self.compiled.par
        if par is not None:
            n = par.extent or 0
            chunks = max(1, min(self.threads, n))
            self._bounds = [(n * c // chunks, n * (c + 1) // chunks) for c in range(chunks)]
            self._thread_temps = [[np.empty(b.shape, np.float32) for b in self.kernel.buffers if b.role == "temp"]
                                  for _ in self._bounds]

    @property
    def flops(self) -> int:
        """2*M*N*K."""
        M, N, K = self.shape
        return 2 * M * N * K

    def __call__(self, a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """``a @ b`` (float32, C-contiguous) into ``out`` (allocated when None)."""
        M, N, K = self.shape
        c = np.empty((M, N), np.float32) if out is None else out
        if self.compiled.par is not None and not self.compiled.checked:
            for x, want in ((a, (M, K)), (b, (K, N)), (c, (M, N))):
                if not (isinstance(x, np.ndarray) and x.dtype == np.float32 and x.shape == want
                        and x.flags.c_contiguous):
                    raise ValueError(f"{self.name}: expected C-contiguous float32 arrays of shapes (M,K), (K,N), (M,N) "
                                     f"= {(M, K)}, {(K, N)}, {(M, N)}")
            f = self.compiled.cfunc
            jobs = [(a.ctypes.data, b.ctypes.data, c.ctypes.data, *[t.ctypes.data for t in tt], lo, hi)
                    for (lo, hi), tt in zip(self._bounds, self._thread_temps)]
            futures = [_pool(len(jobs) - 1).submit(f, *j) for j in jobs[1:]] if len(jobs) > 1 else []
            f(*jobs[0])                                 # the calling thread takes the first slab itself
            for fu in futures:
                fu.result()
        else:
            self.compiled(a, b, c, *self._temps)
        return c


_POOLS: dict[int, object] = {}


def _pool(n: int):
    """A persistent thread pool of ``n`` workers (creating threads per call would cost more than a small matmul)."""
    if n not in _POOLS:
        from concurrent.futures import ThreadPoolExecutor

        _POOLS[n] = ThreadPoolExecutor(n, thread_name_prefix="infopt-matmul")
    return _POOLS[n]


def matmul_rung(name: str, M: int, N: int, K: int, threads: int = 2, **kw) -> MatmulRung:
    """Build and compile one rung (``threads`` only matters for ``packed_mt``)."""
    return MatmulRung(name, M, N, K, threads=threads, **kw)
