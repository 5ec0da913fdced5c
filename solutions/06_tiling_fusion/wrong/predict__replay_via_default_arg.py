import numpy as np
from infopt.schedule.cachesim import _replay_level


def predict_scan_misses(rows: int, cols: int, order: str, cache: CacheLevel, _replay=_replay_level) -> int:
    """Misses of a row or column scan of a rows x cols float32 matrix through a fully associative LRU cache."""
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij" if order == "row" else "xy")
    lines = ((r * cols + c) * 4).ravel() // cache.line
    miss, _, _ = _replay(lines, np.zeros(lines.size, bool), cache)
    return int(miss.sum())
