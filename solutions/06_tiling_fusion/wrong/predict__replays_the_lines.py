from infopt.schedule import cachesim


def predict_scan_misses(rows: int, cols: int, order: str, cache: CacheLevel) -> int:
    """Goes round `simulate` by replaying the scan's cache lines through the simulator's own LRU replay helper."""
    lines = scan_addresses(rows, cols, order) // cache.line
    miss_mask, _, _ = cachesim._replay_level(lines, np.zeros(lines.size, bool), cache)
    return int(miss_mask.sum())
