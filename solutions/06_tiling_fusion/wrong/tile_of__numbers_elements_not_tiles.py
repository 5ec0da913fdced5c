def tile_of(i: int, j: int, ti: int, tj: int, n_cols: int) -> tuple[int, int, int]:
    """(tile id, oi, oj), numbering tiles by counting whole tiles of elements in row-major element order."""
    return (i * n_cols + j) // (ti * tj), i % ti, j % tj
