def plan_offsets(intervals: list) -> dict:
    """Offsets from the library's own planner (not written by the student)."""
    return P.plan_memory(intervals, align=1).offsets
