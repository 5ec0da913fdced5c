"""infopt.kernels.collectives: the ring and tree schedules sum correctly on paper for 2..6 ranks and odd buffers,
malformed schedules fail with a message that says what is wrong (they grade exercise 7), the ring sends
2 (N - 1) / N of the buffer per rank, and the real ring over gloo equals dist.all_reduce."""
from __future__ import annotations

import numpy as np
import pytest

from infopt.kernels.collectives import (Transfer, allreduce_schedule_errors, bus_bandwidth, bytes_sent_per_rank,
                                        ring_allgather_schedule, ring_allreduce_schedule,
                                        ring_reduce_scatter_schedule, run_collectives_demo, simulate_schedule,
                                        tree_allreduce_schedule)


def _buffers(n: int, length: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed + 10 * n + length)
    return [rng.standard_normal(length) for _ in range(n)]


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
@pytest.mark.parametrize("length", [1, 5, 13, 64])
@pytest.mark.parametrize("make", [ring_allreduce_schedule, tree_allreduce_schedule])
def test_allreduce_schedules_give_every_rank_the_sum(n, length, make):
    data = _buffers(n, length)
    total = np.sum(np.stack(data).astype(np.float64), axis=0)
    out = simulate_schedule(make(n), data)
    assert len(out) == n
    for r in range(n):
        np.testing.assert_allclose(out[r], total, rtol=1e-12, atol=1e-12)
    assert allreduce_schedule_errors(make(n), n) == []
    np.testing.assert_array_equal(data[0], _buffers(n, length)[0])          # inputs untouched


@pytest.mark.parametrize("n", [2, 3, 5])
def test_ring_structure_matches_the_lesson(n):
    sched = ring_allreduce_schedule(n)
    assert len(sched) == 2 * (n - 1)
    for s, step in enumerate(sched):
        assert sorted((t.src, t.dst, t.chunk) for t in step) == [(r, (r + 1) % n, (r - s) % n) for r in range(n)]
        assert {t.op for t in step} == {"reduce" if s < n - 1 else "copy"}
    assert ring_allreduce_schedule(1) == []
    assert len(tree_allreduce_schedule(4)) == 2 and len(tree_allreduce_schedule(8)) == 3


@pytest.mark.parametrize("n", [2, 3, 4, 6])
def test_reduce_scatter_and_all_gather_halves(n):
    data = _buffers(n, 11)
    total = np.sum(data, axis=0)
    out = simulate_schedule(ring_reduce_scatter_schedule(n), data)
    for r in range(n):      # rank r owns chunk r, as dist.reduce_scatter gives it
        np.testing.assert_allclose(np.array_split(out[r], n)[r], np.array_split(total, n)[r], rtol=1e-12)
    owned = [np.zeros(11) for _ in range(n)]
    for r in range(n):
        np.array_split(owned[r], n)[r][:] = np.array_split(total, n)[r]
    for r, got in enumerate(simulate_schedule(ring_allgather_schedule(n), owned)):
        np.testing.assert_allclose(got, total, rtol=1e-12)


def test_bytes_sent_are_two_n_minus_one_over_n_of_the_buffer():
    nbytes = 60 * 1024
    for n in range(2, 7):
        assert bytes_sent_per_rank(ring_allreduce_schedule(n), nbytes) == [2 * (n - 1) * nbytes // n] * n
    assert bytes_sent_per_rank(tree_allreduce_schedule(4), nbytes) == [2 * nbytes] * 4     # log2 N whole buffers
    assert bytes_sent_per_rank([], 100, n_ranks=3) == [0, 0, 0]
    assert bus_bandwidth(1000, 0.5, 2) == pytest.approx(2000.0)
    assert bus_bandwidth(1000, 1.0, 4) == pytest.approx(1500.0)


def test_wrong_schedules_are_found_by_what_they_miss():
    n = 3
    errors = allreduce_schedule_errors(ring_allreduce_schedule(n)[:-1], n)     # last all-gather step forgotten
    assert errors and all("is missing the contribution of rank(s)" in e for e in errors)
    twice = ring_allreduce_schedule(n)[: n - 1] * 2 + ring_allreduce_schedule(n)[n - 1:]
    assert any("more than once" in e for e in allreduce_schedule_errors(twice, n))


T = Transfer
MALFORMED = [
    ([[T(0, 3, 0)]], "dst = 3 is not a rank; with 3 ranks they are 0..2"),
    ([[T(-1, 0, 0)]], "src = -1 is not a rank"),
    ([[T(1, 1, 0)]], "rank 1 sends to itself"),
    ([[T(0, 1, 0), T(0, 2, 1)]], "step 0: rank 0 sends twice"),
    ([[T(0, 2, 0), T(1, 2, 1)]], "step 0: rank 2 receives twice"),
    ([[T(0, 1, 3)]], "chunk 3 is out of range; the buffer is split in 3 chunks"),
    ([[T(0, 1, 0, "add")]], "unknown op 'add'"),
    ([T(0, 1, 0)], "step 0 is a Transfer, not a list of Transfer"),
    ([[(0, 1, 0)]], "step 0, transfer 0 .* is a tuple, not a Transfer"),
    ("ring", "a schedule is a list of steps"),
    ([[T(0, 1, 0)], [T(1, 2, 0), T(1, 0, 2)]], "step 1: rank 1 sends twice"),
]


@pytest.mark.parametrize("schedule, match", MALFORMED)
def test_malformed_schedules_say_what_is_wrong(schedule, match):
    with pytest.raises(ValueError, match=match):
        simulate_schedule(schedule, _buffers(3, 6))


def test_bad_buffers_and_sizes_are_clear_errors():
    with pytest.raises(ValueError, match="same shape"):
        simulate_schedule([], [np.zeros(3), np.zeros(4)])
    with pytest.raises(ValueError, match="one numpy array per rank"):
        simulate_schedule([], [])
    with pytest.raises(ValueError, match="n_ranks must be an int >= 1"):
        ring_allreduce_schedule(0)
    with pytest.raises(ValueError, match="nbytes must be an int >= 0"):
        bytes_sent_per_rank([], -1)
    with pytest.raises(ValueError, match="world_size must be an int in 2..8"):
        run_collectives_demo(1)


def test_outside_a_process_group_the_real_ring_says_so():
    import torch

    from infopt.kernels.collectives import ring_allreduce

    with pytest.raises(RuntimeError, match="no torch.distributed process group"):
        ring_allreduce(torch.zeros(4))
    with pytest.raises(ValueError, match="contiguous"):
        ring_allreduce(torch.zeros(4, 4).T)


@pytest.mark.xdist_group("kernels_dist")
def test_real_ring_over_gloo_equals_all_reduce():
    res = run_collectives_demo(world_size=2, nbytes=(1 << 20) + 12, repeats=1, overlap=True, timeout_s=90)
    assert res["allreduce_exact_on_integers"] and res["allreduce_exact_tiny"]
    assert res["allreduce_max_abs_err"] == 0.0          # two ranks: a + b either way
    assert res["reduce_scatter_max_abs_err"] == 0.0 and res["all_gather_max_abs_err"] == 0.0
    assert res["ring_bytes_sent"] == res["formula_bytes_sent_per_rank"] == res["nbytes"]   # 2 (N - 1) / N, N = 2
    assert res["ring_s"] > 0 and res["gloo_s"] > 0
    assert res["ring_over_gloo"] == pytest.approx(res["gloo_s"] / res["ring_s"]) and res["ring_over_gloo_q25"] > 0
    ov = res["overlap"]
    assert ov["speedup"] == pytest.approx(ov["sequential_s"] / ov["overlapped_s"]) and 1.0 <= ov["ideal_speedup"] <= 2


def test_the_schedules_need_no_torch():
    import subprocess
    import sys

    code = ("import sys, infopt.kernels.collectives as c; c.simulate_schedule(c.ring_allreduce_schedule(3), "
            "[[1.0, 2.0, 3.0]] * 3); print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
