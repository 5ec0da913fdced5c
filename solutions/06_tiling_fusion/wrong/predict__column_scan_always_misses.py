def predict_scan_misses(rows: int, cols: int, order: str, cache: CacheLevel) -> int:
    """Misses of a row or column scan: assumes a column scan never reuses a line."""
    lines = rows * cols * 4 // cache.line
    if order == "row":
        return lines
    return rows * cols
