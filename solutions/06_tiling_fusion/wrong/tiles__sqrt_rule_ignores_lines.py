def choose_tiles(n: int, l1: CacheLevel) -> tuple[int, int, int]:
    """Square tiles as big as fit: 3 t^2 floats = the whole cache (no slack, no attention to line boundaries)."""
    t = max(1, min(n, int((l1.size / (3 * 4)) ** 0.5)))
    return t, t, t
