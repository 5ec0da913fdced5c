import numpy as np


def tile_of(i: int, j: int, ti: int, tj: int, n_cols: int) -> tuple[int, int, int]:
    """(tile id, oi, oj) with the tile count from np.ceil: the tile id comes back as a float."""
    tiles_per_row = np.ceil(n_cols / tj)
    return (i // ti) * tiles_per_row + j // tj, i % ti, j % tj
