def choose_tiles(n: int, l1: CacheLevel) -> tuple[int, int, int]:
    """tj = "one cache line" taken as l1.line floats (it is l1.line bytes): wider than the matrix."""
    tj = l1.line
    t = 1
    while t * 2 <= n and ((2 * t) ** 2 + 2 * (2 * t) * tj) * 4 <= 0.75 * l1.size:
        t *= 2
    return t, tj, t
