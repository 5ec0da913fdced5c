def predict_scan_misses(rows: int, cols: int, order: str, cache: CacheLevel) -> int:
    """Misses of a row or column scan, forgetting that a line holds several floats: one miss per element."""
    return rows * cols
