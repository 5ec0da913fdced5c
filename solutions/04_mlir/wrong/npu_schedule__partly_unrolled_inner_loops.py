# WRONG ANSWER (npu_schedule): rule 3: edge sizes, offsets and addresses are computed in the IR inside nb.loop loops. This answer keeps only
# the row-block loop in the IR and unrolls the n and k loops in Python, with their offsets, sizes and acc flags
# as constants.
from infopt.accel import AccelConfig
from infopt.mlir.npu.build import NpuBuilder
from infopt.mlir.npu.lower import operand_type


def _tiles(M: int, N: int, K: int, config: AccelConfig) -> tuple[int, int, int]:
    """(TM, TN, TK): rows of A per block as the SRAMs allow, the array's columns, K per matmul."""
    R, Cc = config.rows, config.cols
    isz, asz = config.operand_dtype.itemsize, config.acc_dtype.itemsize
    if config.dataflow == "ws":
        TK = R
        TM = min(M, config.in_sram_bytes // (K * isz), config.out_sram_bytes // (Cc * asz))
    else:
        TM = min(M, R, config.in_sram_bytes // (K * isz))
        TK = min(K, config.wt_sram_bytes // (Cc * isz))
    return TM, min(Cc, N), min(TK, K)


def emit_npu_schedule(nb: NpuBuilder, A, B, C, config: AccelConfig) -> None:
    """Emit a tiled loop nest of npu ops for C = A @ B within the driver's cycle budget."""
    M, K = A.type.get_shape()
    N = B.type.get_shape()[1]
    TM, TN, TK = _tiles(M, N, K, config)
    isz = config.operand_dtype.itemsize
    with nb.loop(0, M, TM) as m0:
        mt = nb.min(TM, nb.sub(M, m0))
        for k0 in range(0, K, TK):
            nb.dma_load(A, m0, k0, mt, min(TK, K - k0), "in", nb.mul(mt, k0 * isz))
        for n0 in range(0, N, TN):
            nt = min(TN, N - n0)
            for k0 in range(0, K, TK):
                kt = min(TK, K - k0)
                nb.dma_load(B, k0, n0, kt, nt, "wt", 0)
                nb.matmul(nb.mul(mt, k0 * isz), 0, 0, mt, nt, kt, nb.greater(k0, 0), (TM, TN, TK),
                          config.dataflow, operand_type(config))
            nb.dma_store(C, m0, n0, mt, nt, 0)
