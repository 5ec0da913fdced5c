"""The softmax and matmul kernels again, in JAX Pallas: blocks described by BlockSpecs instead of pointer math.

`softmax_pallas` and `matmul_pallas` run `pallas_call(..., interpret=True)` on the CPU (Pallas's interpreter, the
counterpart of TRITON_INTERPRET=1), so they run on any machine; `side_by_side()` lists how each Triton idea reads
in Pallas, for the lesson. jax is imported inside the functions only (importing this module imports no jax), with
JAX_PLATFORMS=cpu set first when unset so that jax looks for no accelerator and prints nothing. Everything runs in
float32: jax's default (x64 off) is all these kernels need.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

__all__ = ["softmax_pallas", "matmul_pallas", "side_by_side", "side_by_side_table"]


def _jax() -> tuple[Any, Any, Any]:
    """(jax, jax.numpy, jax.experimental.pallas), imported on the CPU platform unless the caller chose one."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    try:
        import jax
        import jax.numpy as jnp
        from jax.experimental import pallas as pl
    except ImportError as e:  # pragma: no cover - the course environment has jax
        raise ImportError("infopt.kernels.pallas needs jax (pip install jax==0.10.2)") from e
    return jax, jnp, pl


def _matrix(x: Any, name: str) -> np.ndarray:
    """`x` (numpy, jax or a CPU torch tensor) as a 2-D float32 numpy array, else a clear error."""
    if hasattr(x, "detach"):                          # a torch tensor: copy to the CPU
        x = x.detach().cpu().float().numpy()
    arr = np.asarray(x)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.floating):
        raise TypeError(f"{name} must hold floats, got dtype {arr.dtype}; convert it with .astype(np.float32)")
    if 0 in arr.shape:
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    return np.ascontiguousarray(arr, dtype=np.float32)


def _positive(v: object, name: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or int(v) < 1:
        raise ValueError(f"{name} must be a positive int, got {v!r}")
    return int(v)


def softmax_pallas(x: Any, block_rows: int = 8) -> np.ndarray:
    """Row softmax of a 2-D x with one Pallas program per `block_rows` rows (each sees whole rows).

    The grid is cdiv(rows, block_rows); BlockSpec((block_rows, cols), lambda i: (i, 0)) hands program i its rows,
    the job of Triton's `row = tl.program_id(0)` and `x_ptr + row * stride + cols`. Rows past the end of the last
    block are padding: their results are dropped, as a masked tl.store would."""
    x = _matrix(x, "x")
    block_rows = _positive(block_rows, "block_rows")
    jax, jnp, pl = _jax()
    rows, cols = x.shape

    def kernel(x_ref, o_ref):
        v = x_ref[...]                                # one block of whole rows, read once
        v = v - jnp.max(v, axis=1, keepdims=True)
        e = jnp.exp(v)
        o_ref[...] = e / jnp.sum(e, axis=1, keepdims=True)

    call = pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((rows, cols), jnp.float32),
        grid=(pl.cdiv(rows, block_rows),),
        in_specs=[pl.BlockSpec((block_rows, cols), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((block_rows, cols), lambda i: (i, 0)),
        interpret=True,
    )
    return np.asarray(call(jnp.asarray(x)))


def matmul_pallas(a: Any, b: Any, block: tuple[int, int, int] = (32, 32, 32)) -> np.ndarray:
    """C = A @ B (float32) with a grid of (M/bm, N/bn, K/bk) programs; the K axis of the grid is the reduction
    loop that a Triton matmul writes as `for k in range(0, K, BLOCK_K)` inside one program.

    The output's BlockSpec ignores k, so its block stays put while k runs and accumulates (zeroed at k == 0).
    Blocks that run past K are padded with garbage, so the kernel masks them to zero, like Triton's
    `mask=offs_k < K - k`; blocks past M or N are dropped on write."""
    a, b = _matrix(a, "a"), _matrix(b, "b")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"inner sizes differ: a is {a.shape}, b is {b.shape} (need a [M, K] and b [K, N])")
    if not (isinstance(block, (tuple, list)) and len(block) == 3):
        raise ValueError(f"block must be (bm, bn, bk), got {block!r}")
    bm, bn, bk = (_positive(v, "each block size") for v in block)
    jax, jnp, pl = _jax()
    (M, K), N = a.shape, b.shape[1]

    def kernel(a_ref, b_ref, o_ref):
        k = pl.program_id(2)

        @pl.when(k == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)

        ks = k * bk + jnp.arange(bk)
        ta = jnp.where(ks[None, :] < K, a_ref[...], 0.0)   # the tail block of K holds padding: mask it
        tb = jnp.where(ks[:, None] < K, b_ref[...], 0.0)
        o_ref[...] += jnp.dot(ta, tb, preferred_element_type=jnp.float32)

    call = pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((M, N), jnp.float32),
        grid=(pl.cdiv(M, bm), pl.cdiv(N, bn), pl.cdiv(K, bk)),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, k: (i, k)),
                  pl.BlockSpec((bk, bn), lambda i, j, k: (k, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, k: (i, j)),
        interpret=True,
    )
    return np.asarray(call(jnp.asarray(a), jnp.asarray(b)))


SIDE_BY_SIDE: list[tuple[str, str, str]] = [
    ("which program am I",
     "pid = tl.program_id(0); the launch grid is kernel[(cdiv(n, BLOCK),)](...)",
     "i = pl.program_id(0) inside; grid=(pl.cdiv(n, block),) given to pl.pallas_call"),
    ("where my block lives",
     "pointer arithmetic: offs = pid * BLOCK + tl.arange(0, BLOCK); x_ptr + offs * stride",
     "a BlockSpec: BlockSpec((block,), lambda i: (i,)) maps the grid index to a block index; no pointers"),
    ("reading the block",
     "x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)",
     "x = x_ref[...] (a Ref: the block already copied in; slicing with pl.ds reads part of it)"),
    ("writing the block",
     "tl.store(out_ptr + offs, y, mask=offs < n)",
     "o_ref[...] = y (writes into the output block; Pallas copies it back)"),
    ("the ragged last block",
     "a mask on every load and store: offs < n",
     "out-of-range block rows are padding: dropped on write; mask them with jnp.where before a reduction"),
    ("a reduction loop (matmul's K)",
     "for k in range(0, K, BLOCK_K): acc += tl.dot(a, b) inside one program; acc lives in registers",
     "a third grid axis k; the output BlockSpec ignores k so o_ref stays resident and accumulates; "
     "@pl.when(k == 0) zeroes it"),
    ("block sizes",
     "tl.constexpr meta-parameters (BLOCK_M: tl.constexpr), powers of two for tl.arange",
     "the block_shape of each BlockSpec (static Python ints; on TPU multiples of (8, 128))"),
    ("what the compiler decides",
     "threads, warps and the register layout of each block (#blocked layouts), shared-memory staging",
     "the copies between HBM and VMEM/SMEM and their pipelining over the grid (Mosaic on TPU, Triton on GPU)"),
    ("running without a GPU",
     "TRITON_INTERPRET=1: numpy runs each program instance in turn",
     "pallas_call(..., interpret=True): jax runs the kernel body on the CPU"),
]


def side_by_side() -> list[tuple[str, str, str]]:
    """(concept, Triton, Pallas) rows: how each idea of a Triton kernel is written in Pallas."""
    return list(SIDE_BY_SIDE)


def side_by_side_table() -> str:
    """`side_by_side()` as a Markdown table for a notebook cell (IPython.display.Markdown)."""
    esc = lambda s: s.replace("|", "\\|")  # noqa: E731
    lines = ["| concept | Triton | Pallas |", "|---|---|---|"]
    lines += [f"| {esc(c)} | {esc(t)} | {esc(p)} |" for c, t, p in SIDE_BY_SIDE]
    return "\n".join(lines)
