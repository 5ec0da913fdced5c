def predict_cycles(M: int, N: int, K: int, config: AccelConfig) -> int:
    """Right schedule, but every MATMUL is charged as if the tile filled the array (R rows, C columns)."""
    TM, TK = tiling(M, N, K, config)
    R, C = config.rows, config.cols
    isz, asz = config.operand_dtype.itemsize, config.acc_dtype.itemsize

    def dma(nbytes: int) -> int:
        return config.dma_setup_cycles + -(-nbytes // config.dma_bytes_per_cycle)

    def tile(m: int, n: int, k: int) -> int:
        return R + m + R + C - 2 if config.dataflow == "ws" else k + R + C - 2 + R

    def sizes(total: int, step: int) -> list[int]:
        return [min(step, total - s) for s in range(0, total, step)]

    total = 0
    for mt in sizes(M, TM):
        total += sum(dma(mt * kt * isz) for kt in sizes(K, TK))
        for nt in sizes(N, C):
            total += sum(dma(kt * nt * isz) + tile(mt, nt, kt) for kt in sizes(K, TK))
            total += dma(mt * nt * asz)
    return int(total)
