# WRONG ANSWER (npu_schedule): rule 4: the tile attribute is the largest m, n, k the matmuls issue. Under output stationary this answer takes
# TM = min(rows, in_sram // (K * isz)) without capping it by M, so a matmul with fewer rows than the array
# carries a TM no tile reaches (ws is capped correctly).
from infopt.accel import AccelConfig
from infopt.mlir.npu.build import NpuBuilder
from infopt.mlir.npu.lower import operand_type


def emit_npu_schedule(nb: NpuBuilder, A, B, C, config: AccelConfig) -> None:
    """Emit a tiled loop nest of npu ops for C = A @ B within the driver's cycle budget."""
    M, K = A.type.get_shape()
    N = B.type.get_shape()[1]
    R, Cc = config.rows, config.cols
    isz, asz = config.operand_dtype.itemsize, config.acc_dtype.itemsize
    if config.dataflow == "ws":
        TK = R
        TM = min(M, config.in_sram_bytes // (K * isz), config.out_sram_bytes // (Cc * asz))
    else:
        TM = min(R, config.in_sram_bytes // (K * isz))       # the array's rows, as the in SRAM allows
        TK = min(K, config.wt_sram_bytes // (Cc * isz))
    TM, TN, TK = TM, min(Cc, N), min(TK, K)
    TILE = (TM, TN, TK)

    isz = config.operand_dtype.itemsize
    with nb.loop(0, M, TM) as m0:
        mt = nb.min(TM, nb.sub(M, m0))
        with nb.loop(0, K, TK) as k0:
            nb.dma_load(A, m0, k0, mt, nb.min(TK, nb.sub(K, k0)), "in", nb.mul(nb.mul(mt, k0), isz))
        with nb.loop(0, N, TN) as n0:
            nt = nb.min(TN, nb.sub(N, n0))
            with nb.loop(0, K, TK) as k0:
                kt = nb.min(TK, nb.sub(K, k0))
                nb.dma_load(B, k0, n0, kt, nt, "wt", 0)
                nb.matmul(nb.mul(nb.mul(mt, k0), isz), 0, 0, mt, nt, kt, nb.greater(k0, 0), TILE,
                          config.dataflow, operand_type(config))
            nb.dma_store(C, m0, n0, mt, nt, 0)
