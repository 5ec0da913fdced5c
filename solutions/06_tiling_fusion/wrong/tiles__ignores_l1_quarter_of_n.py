def choose_tiles(n: int, l1: CacheLevel) -> tuple[int, int, int]:
    """(ti, tj, tk) whose tile working set fits in l1, with tj a whole number of cache lines."""
    # a quarter of the matrix per tile in i and k, half in j (wider tiles along the contiguous rows of B and C)
    ti = tk = max(1, n // 4)
    tj = max(1, n // 2)
    return (ti, tj, tk)
