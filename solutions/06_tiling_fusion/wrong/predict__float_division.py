def predict_scan_misses(rows: int, cols: int, order: str, cache: CacheLevel) -> int:
    """The right model, but the line count uses true division: the count comes back as a float."""
    lines = rows * cols * 4 / cache.line
    if order == "row":
        return lines
    capacity = cache.size // cache.line
    return lines if rows <= capacity else rows * cols
