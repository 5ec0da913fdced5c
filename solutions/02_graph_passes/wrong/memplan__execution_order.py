def plan_offsets(intervals: list) -> dict:
    """Arena offsets, placing buffers in execution order (best fit)."""
    placed = []  # (interval, offset)
    offsets = {}
    for iv in sorted(intervals, key=lambda iv: iv.start):
        busy = sorted((off, off + o.size) for o, off in placed if o.start <= iv.end and iv.start <= o.end)
        best, best_gap, cursor = None, None, 0
        for lo, hi in busy:
            if lo - cursor >= iv.size and (best_gap is None or lo - cursor < best_gap):
                best, best_gap = cursor, lo - cursor
            cursor = max(cursor, hi)
        offsets[iv.name] = cursor if best is None else best
        placed.append((iv, offsets[iv.name]))
    return offsets
