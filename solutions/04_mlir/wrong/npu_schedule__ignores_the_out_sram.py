def emit_npu_schedule(nb: NpuBuilder, A, B, C, config: AccelConfig) -> None:
    """Sizes the row blocks by the in SRAM only: their accumulators overflow a small out SRAM."""
    M, K = A.type.get_shape()
    N = B.type.get_shape()[1]
    isz = config.operand_dtype.itemsize
    TN = min(config.cols, N)
    if config.dataflow == "ws":
        TK = min(config.rows, K)
        TM = min(M, config.in_sram_bytes // (K * isz))
    else:
        TM = min(M, config.rows, config.in_sram_bytes // (K * isz))
        TK = min(K, config.wt_sram_bytes // (TN * isz))
    size = config.operand_dtype.itemsize
    kind = operand_type(config)
    with nb.loop(0, M, TM) as m0:
        rows = nb.min(TM, nb.sub(M, m0))
        with nb.loop(0, K, TK) as k0:
            depth = nb.min(TK, nb.sub(K, k0))
            nb.dma_load(A, m0, k0, rows, depth, "in", nb.mul(nb.mul(rows, k0), size))
        with nb.loop(0, N, TN) as n0:
            cols = nb.min(TN, nb.sub(N, n0))
            with nb.loop(0, K, TK) as k0:
                depth = nb.min(TK, nb.sub(K, k0))
                nb.dma_load(B, k0, n0, depth, cols, "wt", 0)
                first_done = nb.greater(k0, 0)
                nb.matmul(nb.mul(nb.mul(rows, k0), size), 0, 0, rows, cols, depth, first_done, (TM, TN, TK),
                          config.dataflow, kind)
            nb.dma_store(C, m0, n0, rows, cols, 0)
