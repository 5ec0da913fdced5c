def predict_scan_misses(rows: int, cols: int, order: str, cache: CacheLevel) -> int:
    """The right model, but the capacity is counted in floats (cache.size // 4), not in lines."""
    lines = rows * cols * 4 // cache.line
    if order == "row":
        return lines
    return lines if rows <= cache.size // 4 else rows * cols
