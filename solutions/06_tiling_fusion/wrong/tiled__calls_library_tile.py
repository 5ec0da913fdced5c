from infopt.schedule.matmul_ladder import naive


def tiled_matmul_kernel(M: int, N: int, K: int, ti: int, tj: int) -> Kernel:
    """The library's naive matmul, tiled with the library's own `tile` primitive."""
    return tile(naive(M, N, K), "i", "j", ti, tj)
