def predict_scan_misses(rows: int, cols: int, order: str, cache: CacheLevel) -> int:
    """Every line is fetched once whatever the order (LRU eviction in a column scan forgotten)."""
    return rows * cols * 4 // cache.line
