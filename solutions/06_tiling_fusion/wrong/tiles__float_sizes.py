def choose_tiles(n: int, l1: CacheLevel) -> tuple[int, int, int]:
    """Sizes from true division: the right numbers, as floats (8.0, 16.0, 8.0)."""
    tj = l1.line / 4
    t = l1.size / 256
    return t, tj, t
