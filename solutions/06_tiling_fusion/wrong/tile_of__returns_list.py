def tile_of(i: int, j: int, ti: int, tj: int, n_cols: int) -> tuple[int, int, int]:
    """The right numbers, returned as a list [tile_id, oi, oj] instead of a tuple."""
    tiles_per_row = -(-n_cols // tj)
    return [(i // ti) * tiles_per_row + j // tj, i % ti, j % tj]
