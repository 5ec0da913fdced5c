def pe_schedule(i: int, j: int, m: int, n: int, k: int, R: int) -> list[tuple[int, int, int, int]]:
    """Counts the row skew but forgets that the input needs j more cycles to hop right to column j."""
    if i >= k or j >= n:
        return []
    return [(R + mm + i, mm, j, i) for mm in range(m)]
