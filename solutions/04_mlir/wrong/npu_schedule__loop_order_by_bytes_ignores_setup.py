# WRONG (rule 2: cycles <= matmul_cycles; the DMA cost is setup + ceil(bytes / bandwidth) PER TRANSFER). To beat
# the driver this picks between two loop orders -- the driver's (A row panel kept, B reloaded per row block) and
# a B-stationary one (a K x TN panel of B kept in wt, A reloaded per column block) -- by the bytes each moves
# only, ignoring config.dma_setup_cycles and the per-transfer rounding: where the order with fewer bytes makes
# more (or worse-rounded) transfers it runs over the budget (e.g. M=4 N=15 K=6 on a 2x4 os float32 array with
# in_sram_bytes=127, dma_bytes_per_cycle=6, dma_setup_cycles=28: 822 cycles against 778).
from infopt.accel import AccelConfig
from infopt.mlir.npu.build import NpuBuilder
from infopt.mlir.npu.lower import operand_type


def emit_npu_schedule(nb: NpuBuilder, A, B, C, config: AccelConfig) -> None:
    """Emit a tiled loop nest of npu ops for C = A @ B within the driver's cycle budget."""
    M, K = A.type.get_shape()
    N = B.type.get_shape()[1]
    R, Ccols = config.rows, config.cols
    isz, asz = config.operand_dtype.itemsize, config.acc_dtype.itemsize
    if config.dataflow == "ws":
        TK = min(R, K)
        TM = min(M, config.in_sram_bytes // (K * isz), config.out_sram_bytes // (Ccols * asz))
    else:
        TM = min(M, R, config.in_sram_bytes // (K * isz))
        TK = min(K, config.wt_sram_bytes // (Ccols * isz))
    TN = min(Ccols, N)
    nM, nN = -(-M // TM), -(-N // TN)
    a_bytes, b_bytes = M * K * isz, K * N * isz
    if K * TN * isz <= config.wt_sram_bytes and b_bytes + nN * a_bytes < a_bytes + nM * b_bytes:
        with nb.loop(0, N, TN) as n0:
            nt = nb.min(TN, nb.sub(N, n0))
            with nb.loop(0, K, TK) as k0:
                nb.dma_load(B, k0, n0, nb.min(TK, nb.sub(K, k0)), nt, "wt", nb.mul(nb.mul(nt, k0), isz))
            with nb.loop(0, M, TM) as m0:
                mt = nb.min(TM, nb.sub(M, m0))
                with nb.loop(0, K, TK) as k0:
                    kt = nb.min(TK, nb.sub(K, k0))
                    nb.dma_load(A, m0, k0, mt, kt, "in", 0)
                    nb.matmul(0, nb.mul(nb.mul(nt, k0), isz), 0, mt, nt, kt, nb.greater(k0, 0), (TM, TN, TK),
                              config.dataflow, operand_type(config))
                nb.dma_store(C, m0, n0, mt, nt, 0)
        return
    with nb.loop(0, M, TM) as m0:
        mt = nb.min(TM, nb.sub(M, m0))
        with nb.loop(0, K, TK) as k0:
            nb.dma_load(A, m0, k0, mt, nb.min(TK, nb.sub(K, k0)), "in", nb.mul(nb.mul(mt, k0), isz))
        with nb.loop(0, N, TN) as n0:
            nt = nb.min(TN, nb.sub(N, n0))
            with nb.loop(0, K, TK) as k0:
                kt = nb.min(TK, nb.sub(K, k0))
                nb.dma_load(B, k0, n0, kt, nt, "wt", 0)
                nb.matmul(nb.mul(nb.mul(mt, k0), isz), 0, 0, mt, nt, kt, nb.greater(k0, 0), (TM, TN, TK),
                          config.dataflow, operand_type(config))
            nb.dma_store(C, m0, n0, mt, nt, 0)
