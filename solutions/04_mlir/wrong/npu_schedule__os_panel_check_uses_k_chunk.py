# WRONG ANSWER (npu_schedule): SRAM rule: the whole TM x K row panel of A sits in `in` for all column blocks. Close variant of
# os_ignores_in_sram: under os this answer checks the in SRAM against one TM x TK chunk (in_sram // (TK * isz))
# rather than the panel (in_sram // (K * isz)), so a small in SRAM overflows.
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
        TK = min(K, config.wt_sram_bytes // (Cc * isz))
        TM = min(M, R, config.in_sram_bytes // (TK * isz))
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
