def plan_offsets(intervals: list) -> dict:
    """Every buffer gets its own bytes, one after the other (always valid, never reuses memory)."""
    offsets, top = {}, 0
    for iv in intervals:
        offsets[iv.name] = top
        top += iv.size
    return offsets
