"""Memory planning: liveness intervals from an execution order, and buffer offsets in one arena with reuse.

A value produced at step ``start`` and last read at step ``end`` occupies its buffer during the closed
interval [start, end] (graph outputs stay live to the last step). Two buffers may share addresses only if
their intervals are disjoint. The peak of a plan is the arena size; the lower bound is the most bytes live
at any one step; "no reuse" is the sum of all buffer sizes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

from ..ir.graph import Graph, GraphError, Node


@dataclass(frozen=True)
class Interval:
    """A buffer's lifetime [start, end] in execution steps (inclusive) and its size in bytes."""

    name: str
    start: int
    end: int
    size: int

    def overlaps(self, other: "Interval") -> bool:
        """True when both buffers are live at some common step."""
        return self.start <= other.end and other.start <= self.end


def liveness(graph: Graph, order: Sequence[Node] | None = None, include_inputs: bool = False) -> list[Interval]:
    """Lifetimes of the activations (node outputs; graph inputs too if asked) for an execution order.

    Constants are not planned (they live in their own storage). ``order`` defaults to ``graph.toposort()``.
    """
    order = list(graph.toposort() if order is None else order)
    step: dict[str, int] = {}
    if include_inputs:
        for x in graph.inputs:
            step[x] = 0
    for t, node in enumerate(order):
        for o in node.outputs:
            if o:
                step[o] = t
    last = dict(step)
    for t, node in enumerate(order):
        for i in node.inputs:
            if i in step:
                if step[i] > t:
                    raise GraphError(f"execution order reads %{i} at step {t} before node {node.label} defines it")
                last[i] = max(last[i], t)
    end = max(len(order) - 1, 0)
    for o in graph.outputs:
        if o in last:
            last[o] = end
    return [Interval(v, step[v], last[v], graph.type_of(v).nbytes) for v in step]


def _aligned(size: int, align: int) -> int:
    return -(-size // align) * align if align > 1 else size


@dataclass
class MemoryPlan:
    """Byte offsets of every buffer in one arena, with the figures that judge the plan."""

    intervals: list[Interval]
    offsets: dict[str, int]
    align: int = 1
    arena_bytes: int = field(init=False)

    def __post_init__(self) -> None:
        self.arena_bytes = max((self.offsets[iv.name] + _aligned(iv.size, self.align) for iv in self.intervals),
                               default=0)

    @property
    def peak_bytes(self) -> int:
        """Bytes the arena needs under this plan."""
        return self.arena_bytes

    @property
    def no_reuse_bytes(self) -> int:
        """Bytes needed if every buffer had its own storage."""
        return no_reuse_bytes(self.intervals)

    @property
    def lower_bound_bytes(self) -> int:
        """No plan can do better: the most bytes live at any one step."""
        return lower_bound_bytes(self.intervals)

    def summary(self) -> dict[str, float]:
        """Peak, no-reuse and lower-bound bytes, and the two ratios."""
        lb, nr, pk = self.lower_bound_bytes, self.no_reuse_bytes, self.peak_bytes
        return {"buffers": len(self.intervals), "no_reuse_bytes": nr, "plan_bytes": pk, "lower_bound_bytes": lb,
                "plan_over_lower_bound": pk / lb if lb else 1.0, "plan_over_no_reuse": pk / nr if nr else 1.0}


def no_reuse_bytes(intervals: Iterable[Interval]) -> int:
    """Sum of all buffer sizes (every tensor gets its own storage)."""
    return sum(iv.size for iv in intervals)


def lower_bound_bytes(intervals: Iterable[Interval]) -> int:
    """The largest total size of buffers live at the same step (a lower bound for any plan's peak)."""
    events: dict[int, int] = {}
    for iv in intervals:
        events[iv.start] = events.get(iv.start, 0) + iv.size
        events[iv.end + 1] = events.get(iv.end + 1, 0) - iv.size
    live = best = 0
    for t in sorted(events):
        live += events[t]
        best = max(best, live)
    return best


def _place(todo: Sequence[Interval], align: int) -> dict[str, int]:
    """Best-fit placement in the given order: each buffer takes the smallest free gap among the buffers
    already placed whose lifetimes overlap it, or goes above them all."""
    placed: list[tuple[Interval, int]] = []
    offsets: dict[str, int] = {}
    for iv in todo:
        size = _aligned(iv.size, align)
        busy = sorted((off, off + _aligned(o.size, align)) for o, off in placed if o.overlaps(iv))
        best_off, best_gap, cursor = None, None, 0
        for lo, hi in busy:
            gap = lo - cursor
            if gap >= size and (best_gap is None or gap < best_gap):
                best_off, best_gap = cursor, gap
            cursor = max(cursor, hi)
        offsets[iv.name] = best_off if best_off is not None else cursor
        placed.append((iv, offsets[iv.name]))
    return offsets


def _breadth_order(intervals: Sequence[Interval]) -> list[Interval]:
    """TFLite's "greedy by breadth" order: visit steps from the most bytes live to the least, and at each
    step the not-yet-placed buffers live there, largest first."""
    steps = sorted({t for iv in intervals for t in (iv.start, iv.end)})
    live = {t: [iv for iv in intervals if iv.start <= t <= iv.end] for t in steps}
    breadth = sorted(steps, key=lambda t: (-sum(iv.size for iv in live[t]), t))
    seen: set[str] = set()
    order: list[Interval] = []
    for t in breadth:
        for iv in sorted(live[t], key=lambda iv: (-iv.size, iv.start, iv.name)):
            if iv.name not in seen:
                seen.add(iv.name)
                order.append(iv)
    return order


ORDERS = ("size", "size_last_end", "breadth", "start", "best")


def plan_memory(intervals: Sequence[Interval] | Graph, align: int = 64, order: str = "best") -> MemoryPlan:
    """Assign arena offsets with reuse: buffers are placed one by one, each in the best-fitting free gap.

    The placement order decides the quality: ``"size"`` (largest first), ``"size_last_end"`` (largest first;
    of equal sizes, the one that dies last first), ``"breadth"`` (TFLite's greedy
    by breadth: busiest steps first), ``"start"`` (execution order, a weak first-come heuristic shown for
    comparison), or ``"best"`` (default: try size, size_last_end and breadth, keep the smallest arena).
    """
    if isinstance(intervals, Graph):
        intervals = liveness(intervals)
    intervals = list(intervals)
    if align < 1:
        raise ValueError(f"align must be >= 1 byte, got {align}")
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    orders = {
        "size": lambda: sorted(intervals, key=lambda iv: (-iv.size, iv.start, iv.name)),
        # of equal sizes, the buffer that dies last first (it then sits low, under the short-lived ones)
        "size_last_end": lambda: sorted(intervals, key=lambda iv: (-iv.size, -iv.end, iv.start, iv.name)),
        "breadth": lambda: _breadth_order(intervals),
        "start": lambda: sorted(intervals, key=lambda iv: (iv.start, -iv.size, iv.name)),
    }
    names = ["size", "size_last_end", "breadth"] if order == "best" else [order]
    plans = [MemoryPlan(intervals, _place(orders[k](), align), align) for k in names]
    return min(plans, key=lambda p: p.arena_bytes)


def check_plan(intervals: Sequence[Interval], offsets: dict[str, int]) -> None:
    """Raise ValueError naming two buffers that are live at the same step and overlap in the arena."""
    for iv in intervals:
        if iv.name not in offsets:
            raise ValueError(f"buffer %{iv.name} has no offset in the plan")
        if not isinstance(offsets[iv.name], int) or offsets[iv.name] < 0:
            raise ValueError(f"buffer %{iv.name} has offset {offsets[iv.name]!r}; offsets must be ints >= 0")
    by_start = sorted(intervals, key=lambda iv: iv.start)
    for i, a in enumerate(by_start):
        for b in by_start[i + 1:]:
            if b.start > a.end:
                break
            oa, ob = offsets[a.name], offsets[b.name]
            if oa < ob + b.size and ob < oa + a.size and a.size and b.size:
                raise ValueError(
                    f"buffers %{a.name} (steps {a.start}..{a.end}, bytes [{oa}, {oa + a.size})) and %{b.name} "
                    f"(steps {b.start}..{b.end}, bytes [{ob}, {ob + b.size})) are live together and overlap"
                )


def plan_peak(intervals: Sequence[Interval], offsets: dict[str, int]) -> int:
    """The arena size a set of offsets needs (max of offset + size)."""
    return max((offsets[iv.name] + iv.size for iv in intervals), default=0)
