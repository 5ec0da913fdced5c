def emit_npu_schedule(nb: NpuBuilder, A, B, C, config: AccelConfig) -> None:
    """The loop nest written out, but the tiling taken from the library (tile_sizes), not computed."""
    M, K = A.type.get_shape()
    N = B.type.get_shape()[1]
    isz, asz = config.operand_dtype.itemsize, config.acc_dtype.itemsize
    TM, TN, TK = tile_sizes(M, N, K, config)   # the library's tiling
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
