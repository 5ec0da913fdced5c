def predict_scan_misses(rows: int, cols: int, order: str, cache: CacheLevel) -> int:
    """The right model for this machine's 64-byte lines, hard-coded: wrong for any other line size."""
    lines = rows * cols * 4 // 64
    if order == "row":
        return lines
    return lines if rows <= cache.size // 64 else rows * cols
