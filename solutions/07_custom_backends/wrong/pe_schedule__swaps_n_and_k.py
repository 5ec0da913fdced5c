def pe_schedule(i: int, j: int, m: int, n: int, k: int, R: int) -> list[tuple[int, int, int, int]]:
    """Right cycles, but writes the PE's (row, column) as (n_index, k_index): PE(i, j) holds B[i, j], so k = i, n = j."""
    if i >= k or j >= n:
        return []
    return [(R + mm + i + j, mm, i, j) for mm in range(m)]
