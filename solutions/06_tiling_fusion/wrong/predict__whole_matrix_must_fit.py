def predict_scan_misses(rows: int, cols: int, order: str, cache: CacheLevel) -> int:
    """A column scan reuses lines only when the whole matrix fits in the cache (one line per row is enough)."""
    lines = rows * cols * 4 // cache.line
    if order == "row":
        return lines
    return lines if lines <= cache.size // cache.line else rows * cols
