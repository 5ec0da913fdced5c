def pe_schedule(i: int, j: int, m: int, n: int, k: int, R: int) -> list[tuple[int, int, int, int]]:
    """Right MACs and cycles, but lists them from the last input row to the first (not in order)."""
    if i >= k or j >= n:
        return []
    return [(R + mm + i + j, mm, j, i) for mm in reversed(range(m))]
