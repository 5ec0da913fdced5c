def plan_offsets(intervals: list) -> dict:
    """Arena offsets (the caller's list sorted in place)."""
    placed = []  # (interval, offset)
    offsets = {}
    intervals.sort(key=lambda iv: (-iv.size, iv.start))
    for iv in intervals:
        busy = sorted((off, off + o.size) for o, off in placed if o.start <= iv.end and iv.start <= o.end)
        best, best_gap, cursor = None, None, 0
        for lo, hi in busy:
            if lo - cursor >= iv.size and (best_gap is None or lo - cursor < best_gap):
                best, best_gap = cursor, lo - cursor
            cursor = max(cursor, hi)
        offsets[iv.name] = cursor if best is None else best
        placed.append((iv, offsets[iv.name]))
    return offsets
