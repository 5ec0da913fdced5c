def predict_scan_misses(rows: int, cols: int, order: str, cache: CacheLevel) -> int:
    """A column scan that overflows the cache is charged one miss per line per pass over the rows it cannot hold."""
    lines = rows * cols * 4 // cache.line
    if order == "row":
        return lines
    capacity = cache.size // cache.line
    if rows <= capacity:
        return lines
    return lines + (rows - capacity) * cols
