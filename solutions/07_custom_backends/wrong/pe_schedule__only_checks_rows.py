def pe_schedule(i: int, j: int, m: int, n: int, k: int, R: int) -> list[tuple[int, int, int, int]]:
    """Returns [] for the PE rows below the weight tile, but forgets the columns right of it (j >= n)."""
    if i >= k:
        return []
    return [(R + mm + i + j, mm, j, i) for mm in range(m)]
