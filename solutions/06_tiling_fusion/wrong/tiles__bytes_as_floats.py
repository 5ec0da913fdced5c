def choose_tiles(n: int, l1: CacheLevel) -> tuple[int, int, int]:
    """Square tiles with 3 t^2 elements filling the cache, counting the cache's bytes as if each were a float."""
    t = max(1, min(n, int((l1.size / 3) ** 0.5)))
    return t, t, t
