def predict_cycles(M: int, N: int, K: int, config: AccelConfig) -> int:
    """Sizes the row blocks by the in SRAM alone: the out SRAM, which holds TM x C results, never limits TM."""
    _, TK = tiling(M, N, K, config)
    R, C = config.rows, config.cols
    isz, asz = config.operand_dtype.itemsize, config.acc_dtype.itemsize
    TM = min(M, config.in_sram_bytes // (K * isz)) if config.dataflow == "ws" else min(M, R)

    def dma(nbytes: int) -> int:
        return config.dma_setup_cycles + -(-nbytes // config.dma_bytes_per_cycle)

    def tile(m: int, n: int, k: int) -> int:
        return R + m + R + n - 2 if config.dataflow == "ws" else k + m + n - 2 + R

    def sizes(total: int, step: int) -> list[int]:
        return [min(step, total - s) for s in range(0, total, step)]

    total = 0
    for mt in sizes(M, TM):
        total += sum(dma(mt * kt * isz) for kt in sizes(K, TK))
        for nt in sizes(N, C):
            total += sum(dma(kt * nt * isz) + tile(mt, nt, kt) for kt in sizes(K, TK))
            total += dma(mt * nt * asz)
    return int(total)
