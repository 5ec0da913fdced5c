def tile_of(i: int, j: int, ti: int, tj: int, n_cols: int) -> tuple[int, int, int]:
    """(tile id, oi, oj), but the offsets take the tile sizes the wrong way round (rows modulo tj)."""
    tiles_per_row = -(-n_cols // tj)
    return (i // ti) * tiles_per_row + j // tj, i % tj, j % ti
