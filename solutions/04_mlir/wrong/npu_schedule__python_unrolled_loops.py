def emit_npu_schedule(nb: NpuBuilder, A, B, C, config: AccelConfig) -> None:
    """Emit the driver's tiled loop nest of npu ops for C = A @ B."""
    M, K = A.type.get_shape()
    N = B.type.get_shape()[1]
    isz, asz = config.operand_dtype.itemsize, config.acc_dtype.itemsize
    if config.dataflow == "ws":
        TK = min(config.rows, K)
        TM = min(M, config.in_sram_bytes // (K * isz), config.out_sram_bytes // (config.cols * asz))
    else:
        TM = min(M, config.rows, config.in_sram_bytes // (K * isz))
        TK = min(K, config.wt_sram_bytes // (config.cols * isz))
    TN = min(config.cols, N)
    isz = config.operand_dtype.itemsize
    # every tile is known when the pass runs: emit the commands straight, no loops needed
    for m0 in range(0, M, TM):
        mt = min(TM, M - m0)
        for k0 in range(0, K, TK):
            kt = min(TK, K - k0)
            nb.dma_load(A, m0, k0, mt, kt, "in", mt * k0 * isz)
        for n0 in range(0, N, TN):
            nt = min(TN, N - n0)
            for k0 in range(0, K, TK):
                kt = min(TK, K - k0)
                nb.dma_load(B, k0, n0, kt, nt, "wt", 0)
                nb.matmul(mt * k0 * isz, 0, 0, mt, nt, kt, nb.greater(k0, 0), (TM, TN, TK), config.dataflow,
                          operand_type(config))
            nb.dma_store(C, m0, n0, mt, nt, 0)
