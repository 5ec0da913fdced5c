from infopt.passes.memory import _place


def plan_offsets(intervals: list) -> dict:
    """Arena offsets for buffers with lifetimes: no two simultaneously live buffers overlap."""
    order = sorted(intervals, key=lambda iv: (-iv.size, iv.start, iv.name))
    return _place(order, 1)  # best-fit placement in that order
