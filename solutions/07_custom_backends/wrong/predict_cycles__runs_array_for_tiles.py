from infopt.accel.array import os_tile, ws_tile


def predict_cycles(M: int, N: int, K: int, config: AccelConfig) -> int:
    """Cycles of compile_matmul(M, N, K, config) on the simulator: DMA and MATMUL commands, back to back."""
    C = config.cols
    TM, TK = tiling(M, N, K, config)
    isz, asz = config.operand_dtype.itemsize, config.acc_dtype.itemsize
    run = ws_tile if config.dataflow == "ws" else os_tile
    tile_cache: dict[tuple[int, int, int], int] = {}

    def dma(nbytes: int) -> int:
        return config.dma_setup_cycles + -(-nbytes // config.dma_bytes_per_cycle)

    def tile(m: int, n: int, k: int) -> int:
        # the array's cycles for one tile shape (zeros: only the count matters)
        if (m, n, k) not in tile_cache:
            z = config.operand_dtype
            tile_cache[(m, n, k)] = run(np.zeros((m, k), z), np.zeros((k, n), z), config).cycles
        return tile_cache[(m, n, k)]

    total = 0
    for m0 in range(0, M, TM):
        mt = min(TM, M - m0)
        for k0 in range(0, K, TK):
            total += dma(mt * min(TK, K - k0) * isz)
        for n0 in range(0, N, C):
            nt = min(C, N - n0)
            for k0 in range(0, K, TK):
                kt = min(TK, K - k0)
                total += dma(kt * nt * isz) + tile(mt, nt, kt)
            total += dma(mt * nt * asz)
    return total
