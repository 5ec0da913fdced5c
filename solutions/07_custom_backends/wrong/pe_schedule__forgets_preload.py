def pe_schedule(i: int, j: int, m: int, n: int, k: int, R: int) -> list[tuple[int, int, int, int]]:
    """Right skew, but counts cycles from the first input instead of from the start of the tile (no preload)."""
    if i >= k or j >= n:
        return []
    return [(mm + i + j, mm, j, i) for mm in range(m)]
