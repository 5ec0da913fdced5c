def predict_scan_misses(rows: int, cols: int, order: str, cache: CacheLevel) -> int:
    """Misses of a row or column scan; compares `order` by identity, which holds only for the interned literal."""
    lines = rows * cols * 4 // cache.line
    if order is "row":
        return lines
    capacity = cache.size // cache.line
    return lines if rows <= capacity else rows * cols
