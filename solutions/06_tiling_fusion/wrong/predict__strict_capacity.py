def predict_scan_misses(rows: int, cols: int, order: str, cache: CacheLevel) -> int:
    """The right model, except that a column scan whose rows exactly fill the cache is counted as not fitting."""
    lines = rows * cols * 4 // cache.line
    if order == "row":
        return lines
    capacity = cache.size // cache.line
    return lines if rows < capacity else rows * cols
