def pe_schedule(i: int, j: int, m: int, n: int, k: int, R: int) -> list[tuple[int, int, int, int]]:
    """Right schedule, but the rows come from np.arange, so every entry holds numpy integers, not Python ints."""
    if i >= k or j >= n:
        return []
    return [(R + mm + i + j, mm, j, i) for mm in np.arange(m)]
