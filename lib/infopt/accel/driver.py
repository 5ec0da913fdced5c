"""The driver: tile a matmul of any size onto the array as a command stream, and run it.

Tiling (the same for both dataflows; only the block sizes differ, see ``infopt.accel.tiling``):

    for each block of TM rows of A:                 ws: TM = as many rows as the SRAMs hold; os: TM = R
        LOAD the block's row panel A[m0:m1, :] into `in`, one k-chunk after another (kept for all n)
        for each block of C columns of B:
            [LOAD the bias row, repeated, into `out`]
            for each k-chunk of TK:                 ws: TK = R;  os: TK = as much of K as `wt` holds
                LOAD B[k0:k1, n0:n1] into `wt`;  MATMUL (acc=1 after the first chunk, or with a bias)
            STORE `out` to C[m0:m1, n0:n1] (ReLU on the way if asked)

The k-chunk of the panel that starts at column k0 sits at byte ``mt * k0 * itemsize`` of `in`, so every
tile is contiguous. Edge blocks are simply smaller: any M, N, K works.
"""
from __future__ import annotations

import numpy as np

from .config import AccelConfig, AccelError, as_operand
from .isa import DmaLoad, DmaStore, MatMul, Program
from .simulator import Accelerator, RunStats
from .tiling import tiling


def compile_matmul(
    M: int, N: int, K: int, config: AccelConfig, bias: bool = False, relu: bool = False,
    names: tuple[str, str, str, str] = ("A", "B", "C", "bias"),
) -> Program:
    """The command stream for C = relu?(A @ B + bias?) with A: M x K, B: K x N, bias: 1 x N in DRAM."""
    a, b, c, bname = names
    TM, TK = tiling(M, N, K, config)
    isz = config.operand_dtype.itemsize
    prog = Program(tensors={a: (M, K), b: (K, N), c: (M, N)})
    if bias:
        prog.tensors[bname] = (1, N)
    for m0 in range(0, M, TM):
        mt = min(TM, M - m0)
        for k0 in range(0, K, TK):
            prog.append(DmaLoad("in", mt * k0 * isz, a, (m0, m0 + mt), (k0, min(K, k0 + TK))))
        for n0 in range(0, N, config.cols):
            nt = min(config.cols, N - n0)
            if bias:
                prog.append(DmaLoad("out", 0, bname, (0, 1), (n0, n0 + nt), repeat=mt))
            for k0 in range(0, K, TK):
                kt = min(TK, K - k0)
                prog.append(DmaLoad("wt", 0, b, (k0, k0 + kt), (n0, n0 + nt)))
                prog.append(MatMul(mt * k0 * isz, 0, 0, mt, nt, kt, acc=bias or k0 > 0))
            prog.append(DmaStore(0, c, (m0, m0 + mt), (n0, n0 + nt), relu=relu))
    return prog


def matmul(
    A: np.ndarray, B: np.ndarray, config: AccelConfig, bias: np.ndarray | None = None,
    relu: bool = False, mode: str = "vector",
) -> tuple[np.ndarray, RunStats]:
    """C = relu?(A @ B + bias) on the simulated accelerator; returns (C, RunStats)."""
    A = as_operand(A, config, "A")
    B = as_operand(B, config, "B")
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise AccelError(f"matmul needs A (M, K) and B (K, N); got {A.shape} and {B.shape}")
    M, K = A.shape
    N = B.shape[1]
    dram = {"A": A, "B": B, "C": np.zeros((M, N), dtype=config.acc_dtype)}
    if bias is not None:
        bias = np.asarray(bias)
        if bias.shape not in ((N,), (1, N)) or bias.dtype != config.acc_dtype:
            raise AccelError(f"bias must have shape ({N},) and dtype {config.acc_dtype}; got {bias.shape} {bias.dtype}")
        dram["bias"] = bias.reshape(1, N)
    prog = compile_matmul(M, N, K, config, bias=bias is not None, relu=relu)
    stats = Accelerator(config).run(prog, dram, mode=mode)
    return dram["C"], stats
