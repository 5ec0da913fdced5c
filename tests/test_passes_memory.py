"""Tests for infopt.passes.memory: liveness, the arena planner, its validity check and the bounds."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infopt.ir import Graph, TensorType
from infopt.passes import Interval, check_plan, liveness, lower_bound_bytes, no_reuse_bytes, plan_memory, plan_peak


def _diamond() -> Graph:
    g = Graph("diamond")
    x = g.add_input("x", TensorType((4, 8)))
    a = g.add_node("Relu", [x], outputs=["a"]).outputs[0]
    b = g.add_node("Exp", [a], outputs=["b"]).outputs[0]
    c = g.add_node("Neg", [a], outputs=["c"]).outputs[0]
    d = g.add_node("Add", [b, c], outputs=["d"]).outputs[0]
    g.outputs = [d]
    return g


def _brute_intervals(graph, order):
    """Independent liveness: a value is live at step t if defined at or before t and read at or after t."""
    out = {}
    for t, n in enumerate(order):
        for o in n.outputs:
            reads = [s for s, m in enumerate(order) if o in m.inputs]
            end = len(order) - 1 if o in graph.outputs else max(reads, default=t)
            out[o] = (t, end)
    return out


def test_liveness_matches_a_brute_force_definition():
    g = _diamond()
    order = g.toposort()
    ivs = {iv.name: (iv.start, iv.end) for iv in liveness(g, order)}
    assert ivs == _brute_intervals(g, order)
    assert all(iv.size == 4 * 8 * 4 for iv in liveness(g))


def test_bounds_on_the_diamond():
    ivs = liveness(_diamond())
    # a is live with b and c at step 2: three 128-byte buffers
    assert lower_bound_bytes(ivs) == 3 * 128
    assert no_reuse_bytes(ivs) == 4 * 128
    plan = plan_memory(ivs, align=1)
    check_plan(plan.intervals, plan.offsets)
    assert plan.peak_bytes == 3 * 128 == plan_peak(ivs, plan.offsets)


def test_check_plan_names_the_overlapping_buffers():
    ivs = [Interval("p", 0, 2, 100), Interval("q", 1, 3, 100), Interval("r", 3, 4, 100)]
    check_plan(ivs, {"p": 0, "q": 100, "r": 0})  # r reuses p's bytes after p died
    with pytest.raises(ValueError, match=r"%p .*%q|%q .*%p"):
        check_plan(ivs, {"p": 0, "q": 50, "r": 0})
    with pytest.raises(ValueError, match="no offset"):
        check_plan(ivs, {"p": 0, "q": 100})


@st.composite
def _intervals(draw):
    n = draw(st.integers(1, 30))
    out = []
    for k in range(n):
        s = draw(st.integers(0, 20))
        e = draw(st.integers(s, s + 8))
        out.append(Interval(f"v{k}", s, e, draw(st.integers(1, 4096))))
    return out


@settings(max_examples=60, deadline=None)
@given(_intervals(), st.sampled_from([1, 64]), st.sampled_from(["size", "start"]))
def test_plans_are_valid_and_between_the_bounds(ivs, align, order):
    plan = plan_memory(ivs, align=align, order=order)
    check_plan(ivs, plan.offsets)
    assert all(plan.offsets[iv.name] % align == 0 for iv in ivs)
    assert lower_bound_bytes(ivs) <= plan.peak_bytes
    assert plan.peak_bytes <= sum(-(-iv.size // align) * align for iv in ivs)


def test_lower_bound_matches_a_step_by_step_count():
    rng = np.random.default_rng()
    ivs = []
    for k in range(40):
        s = int(rng.integers(0, 30))
        ivs.append(Interval(f"v{k}", s, s + int(rng.integers(0, 6)), int(rng.integers(1, 1000))))
    per_step = [sum(iv.size for iv in ivs if iv.start <= t <= iv.end) for t in range(40)]
    assert lower_bound_bytes(ivs) == max(per_step)


def _random_net(seed: int) -> Graph:
    """A seeded random conv net: stages of Conv + activation with residual Adds, channels changing per stage."""
    rng = np.random.default_rng(seed)
    g = Graph("net")
    h = g.add_input("x", TensorType((1, 8, 16, 16)))
    for stage in range(int(rng.integers(2, 5))):
        c = int(rng.integers(4, 33))
        w = g.add_initializer(g.fresh_name("w"), np.zeros((c, g.type_of(h).shape[1], 3, 3), np.float32))
        h = g.add_node("Conv", [h, w], {"pads": [1, 1, 1, 1], "strides": [1 + (stage > 0)] * 2}).outputs[0]
        for _ in range(int(rng.integers(1, 4))):
            skip = h
            for _ in range(int(rng.integers(1, 3))):
                w = g.add_initializer(g.fresh_name("w"), np.zeros((c, c, 3, 3), np.float32))
                h = g.add_node("Relu", [g.add_node("Conv", [h, w], {"pads": [1, 1, 1, 1]}).outputs[0]]).outputs[0]
            h = g.add_node("Add", [h, skip]).outputs[0]
    g.outputs = [g.add_node("GlobalAveragePool", [h]).outputs[0]]
    return g


def test_planner_is_near_the_lower_bound_on_random_conv_nets():
    # placement is NP-hard in general: greedy is usually at the bound, sometimes not; judge the distribution
    ratios = []
    for seed in range(40):
        ivs = liveness(_random_net(seed))
        plan = plan_memory(ivs, align=1)
        check_plan(ivs, plan.offsets)
        single = min(plan_memory(ivs, align=1, order=o).peak_bytes for o in ("size", "size_last_end", "breadth"))
        assert plan.peak_bytes <= single  # "best" is never worse than any order alone
        ratios.append(plan.peak_bytes / lower_bound_bytes(ivs))
    # seeded, so deterministic: with "size_last_end" among the orders tried, every one of these nets, and 1,400 more
    # seeds tried when that order was added, is planned at the lower bound; allow a little slack all the same
    assert np.median(ratios) <= 1.0 and max(ratios) <= 1.05, max(ratios)


def test_bad_arguments():
    with pytest.raises(ValueError, match="align"):
        plan_memory([Interval("a", 0, 1, 8)], align=0)
    with pytest.raises(ValueError, match="order"):
        plan_memory([Interval("a", 0, 1, 8)], order="random")
