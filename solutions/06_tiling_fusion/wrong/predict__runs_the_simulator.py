def predict_scan_misses(rows: int, cols: int, order: str, cache: CacheLevel) -> int:
    """Asks the simulator instead of predicting."""
    return simulate(scan_addresses(rows, cols, order), [cache]).misses("L1")
