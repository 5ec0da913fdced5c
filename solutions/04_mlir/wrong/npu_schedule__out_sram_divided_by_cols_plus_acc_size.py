def emit_npu_schedule(nb: NpuBuilder, A, B, C, config: AccelConfig) -> None:
    """Divides the out SRAM by cols + the accumulator size instead of their product: row blocks too tall for `out`."""
    M, K = A.type.get_shape()
    N = B.type.get_shape()[1]
    isz, asz = config.operand_dtype.itemsize, config.acc_dtype.itemsize
    # the largest tiles the SRAMs and the array allow: a row block of A stays in `in` for every column block
    if config.dataflow == "ws":     # weights on the array: k <= rows; the block's accumulators fill `out`
        TK = min(config.rows, K)
        TM = min(M, config.in_sram_bytes // (K * isz), config.out_sram_bytes // (config.cols + asz))
    else:                           # outputs on the array: m <= rows; k is as long as `wt` allows
        TM = min(M, config.rows, config.in_sram_bytes // (K * isz))
        TK = min(K, config.wt_sram_bytes // (config.cols * isz))
    TN = min(config.cols, N)
    with nb.loop(0, M, TM) as m0:
        mt = nb.min(TM, nb.sub(M, m0))
        with nb.loop(0, K, TK) as k0:
            kt = nb.min(TK, nb.sub(K, k0))
            nb.dma_load(A, m0, k0, mt, kt, "in", nb.mul(nb.mul(mt, k0), isz))
        with nb.loop(0, N, TN) as n0:
            nt = nb.min(TN, nb.sub(N, n0))
            with nb.loop(0, K, TK) as k0:
                kt = nb.min(TK, nb.sub(K, k0))
                nb.dma_load(B, k0, n0, kt, nt, "wt", 0)
                nb.matmul(nb.mul(nb.mul(mt, k0), isz), 0, 0, mt, nt, kt, nb.greater(k0, 0), (TM, TN, TK),
                          config.dataflow, operand_type(config))
            nb.dma_store(C, m0, n0, mt, nt, 0)


