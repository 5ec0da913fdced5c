def plan_offsets(intervals: list) -> dict:
    """Arena offsets for buffers with lifetimes: no two simultaneously live buffers overlap."""
    order = sorted(intervals, key=lambda iv: (-iv.size, iv.name))  # deterministic ties
    placed, offsets = [], {}
    for iv in order:
        busy = sorted((off, off + o.size) for o, off in placed if o.start <= iv.end and iv.start <= o.end)
        best, best_gap, cursor = None, None, 0
        for lo, hi in busy:
            gap = lo - cursor
            if gap >= iv.size and (best_gap is None or gap < best_gap):
                best, best_gap = cursor, gap
            cursor = max(cursor, hi)
        offsets[iv.name] = best if best is not None else cursor
        placed.append((iv, offsets[iv.name]))
    return offsets
