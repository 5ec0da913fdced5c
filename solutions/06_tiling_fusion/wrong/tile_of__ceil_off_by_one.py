def tile_of(i: int, j: int, ti: int, tj: int, n_cols: int) -> tuple[int, int, int]:
    """(tile id, oi, oj) with 'one more tile for the partial one' always added, even when tj divides n_cols."""
    tiles_per_row = n_cols // tj + 1
    return (i // ti) * tiles_per_row + j // tj, i % ti, j % tj
