def choose_tiles(n: int, l1: CacheLevel) -> tuple[int, int, int]:
    """Good tile sizes, returned as a list [ti, tj, tk] instead of a tuple."""
    tj = min(n, l1.line // 4)
    t = 1
    while t * 2 <= n and ((2 * t) ** 2 + 2 * (2 * t) * tj) * 4 <= 0.75 * l1.size:
        t *= 2
    return [t, tj, t]
