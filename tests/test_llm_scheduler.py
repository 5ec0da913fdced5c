"""schedule_step (exercise 4's reference), every rule of its contract, and the request traces."""
from __future__ import annotations

import copy

import numpy as np
import pytest

from infopt.llm.paged_blocks import num_blocks_for
from infopt.llm.scheduler import SeqView, StepPlan, schedule_step

BS = 4


def views(*specs: tuple[int, float, int]) -> list[SeqView]:
    return [SeqView(i, a, n) for i, a, n in specs]


def test_plain_step_runs_everyone_and_admits_fcfs():
    running = views((0, 0.0, 5), (1, 1.0, 6))          # neither at a block boundary: no block needed
    waiting = views((3, 3.0, 4), (2, 2.0, 8))          # given out of order: admitted by arrival
    plan = schedule_step(waiting, running, free_blocks=3, block_size=BS, max_batch=8)
    assert plan == StepPlan(preempt=[], run=[0, 1], admit=[2, 3])


def test_block_need_off_by_one_at_the_boundary():
    # num_tokens % block_size == 0 needs a new block; one more or one less does not
    for n, need in ((4, 1), (3, 0), (5, 0), (8, 1)):
        plan = schedule_step([], views((0, 0.0, n)), free_blocks=0, block_size=BS, max_batch=4)
        assert plan.preempt == ([0] if need else []), (n, plan)
    # with one free block, two sequences at a boundary cannot both decode
    plan = schedule_step([], views((0, 0.0, 4), (1, 1.0, 8)), free_blocks=1, block_size=BS, max_batch=4)
    assert plan.preempt == [1] and plan.run == [0]


def test_preempts_the_latest_arrival_not_the_one_needing_the_block():
    # seq 2 arrived last and needs no block; it is still the one preempted, and its 2 blocks pay for seq 0's need
    running = views((0, 0.0, 8), (1, 1.0, 5), (2, 2.0, 6))
    plan = schedule_step([], running, free_blocks=0, block_size=BS, max_batch=4)
    assert plan.preempt == [2] and plan.run == [0, 1] and plan.admit == []


def test_preemption_ties_break_on_higher_seq_id_and_repeat_until_it_fits():
    running = views((5, 1.0, 4), (7, 1.0, 4), (6, 1.0, 4))
    plan = schedule_step([], running, free_blocks=0, block_size=BS, max_batch=4)
    # 3 blocks needed, 0 free: preempt 7 (frees 1 block, need 2 -> 2 > 1), then 6 (free 2, need 1): fits
    assert plan.preempt == [7, 6] and plan.run == [5]


def test_no_preemption_unless_a_block_is_needed():
    # zero free blocks is fine while nobody sits at a block boundary
    plan = schedule_step([], views((0, 0.0, 4), (1, 0.5, 4)), free_blocks=0, block_size=16, max_batch=4)
    assert plan.preempt == [] and plan.run == [0, 1]
    # both at a boundary (16 % 16 == 0): preempting seq 1 returns its one block, which pays for seq 0's need
    plan = schedule_step([], views((0, 0.0, 16), (1, 0.5, 16)), free_blocks=0, block_size=16, max_batch=4)
    assert plan.preempt == [1] and plan.run == [0]


def test_fcfs_never_skips_ahead():
    # the first waiting one needs 3 blocks, only 2 are free: the small one behind it must not jump the queue
    waiting = views((1, 1.0, 12), (2, 2.0, 2))
    plan = schedule_step(waiting, [], free_blocks=2, block_size=BS, max_batch=8)
    assert plan.admit == []
    plan = schedule_step(waiting, [], free_blocks=4, block_size=BS, max_batch=8)
    assert plan.admit == [1, 2]


def test_admission_uses_what_decodes_leave():
    # running seq needs a block (8 % 4 == 0): of 3 free only 2 remain, so a 9-token prompt (3 blocks) waits
    plan = schedule_step(views((1, 1.0, 9)), views((0, 0.0, 8)), free_blocks=3, block_size=BS, max_batch=8)
    assert plan.run == [0] and plan.admit == []
    plan = schedule_step(views((1, 1.0, 8)), views((0, 0.0, 8)), free_blocks=3, block_size=BS, max_batch=8)
    assert plan.admit == [1]


def test_max_batch_counts_running_minus_preempted_plus_admitted():
    waiting = views((3, 3.0, 1), (4, 4.0, 1), (5, 5.0, 1))
    plan = schedule_step(waiting, views((0, 0.0, 5), (1, 1.0, 5)), free_blocks=10, block_size=BS, max_batch=3)
    assert plan.admit == [3]
    plan = schedule_step(waiting, views((0, 0.0, 5), (1, 1.0, 5), (2, 2.0, 5)), 10, BS, 3)
    assert plan.admit == []
    # a preemption frees a batch slot, but the freed blocks go to the waiting queue's head, not the victim
    plan = schedule_step(waiting, views((0, 0.0, 8), (1, 1.0, 7)), free_blocks=0, block_size=BS, max_batch=2)
    assert plan.preempt == [1] and plan.run == [0] and plan.admit == [3]


def test_the_just_preempted_is_not_readmitted_even_when_it_would_fit():
    # seq 1 is preempted (frees 2 blocks, 1 left after seq 0's need); it alone would fit again now, but it is not
    # among `waiting`, so it must not appear in admit; the waiting head (1 block) takes the space
    running = views((0, 0.0, 4), (1, 1.0, 6))
    plan = schedule_step(views((2, 0.5, 3)), running, free_blocks=0, block_size=BS, max_batch=4)
    assert plan.preempt == [1] and 1 not in plan.admit and plan.admit == [2]


def test_inputs_are_not_mutated():
    waiting = views((4, 4.0, 3), (3, 3.0, 9))
    running = views((0, 0.0, 8), (1, 1.0, 4), (2, 2.0, 12))
    w0, r0 = copy.deepcopy(waiting), copy.deepcopy(running)
    schedule_step(waiting, running, free_blocks=1, block_size=BS, max_batch=3)
    assert waiting == w0 and running == r0


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="block_size"):
        schedule_step([], [], 1, 0, 4)
    with pytest.raises(ValueError, match="max_batch"):
        schedule_step([], [], 1, 4, 0)
    with pytest.raises(ValueError, match="free_blocks"):
        schedule_step([], [], -1, 4, 4)
    with pytest.raises(ValueError, match="twice"):
        schedule_step(views((1, 0.0, 3)), views((1, 0.0, 3)), 1, 4, 4)
    with pytest.raises(ValueError, match="num_tokens"):
        schedule_step(views((1, 0.0, 0)), [], 1, 4, 4)


@pytest.mark.parametrize("seed", range(40))
def test_random_plans_keep_every_invariant(seed):
    """On random inputs: the plan's decodes and admissions fit the blocks, the preempted are exactly the latest
    arrivals, no fewer would do, the admitted are an FCFS prefix that stops only where the next one cannot go."""
    rng = np.random.default_rng(seed)
    bs = int(rng.integers(1, 6))
    ids = rng.permutation(40).tolist()
    def some() -> list[SeqView]:
        return [SeqView(ids.pop(), float(rng.integers(0, 6)), int(rng.integers(1, 20))) for _ in range(rng.integers(0, 8))]

    running, waiting = some(), some()
    free, max_batch = int(rng.integers(0, 8)), int(rng.integers(1, 10))
    plan = schedule_step(waiting, running, free, bs, max_batch)

    by_id = {s.seq_id: s for s in running + waiting}
    order = sorted(running, key=lambda s: (s.arrival_s, s.seq_id), reverse=True)
    assert plan.preempt == [s.seq_id for s in order[:len(plan.preempt)]]
    assert plan.run == [s.seq_id for s in running if s.seq_id not in plan.preempt]

    def decode_need(ids_):
        return sum(by_id[i].num_tokens % bs == 0 for i in ids_)

    pool = free + sum(num_blocks_for(by_id[i].num_tokens, bs) for i in plan.preempt)
    assert decode_need(plan.run) <= pool
    if plan.preempt:  # one preemption fewer would not have fitted
        fewer = plan.preempt[:-1]
        kept = [s.seq_id for s in running if s.seq_id not in fewer]
        assert decode_need(kept) > free + sum(num_blocks_for(by_id[i].num_tokens, bs) for i in fewer)
    left = pool - decode_need(plan.run)
    queue = sorted(waiting, key=lambda s: (s.arrival_s, s.seq_id))
    assert plan.admit == [s.seq_id for s in queue[:len(plan.admit)]]
    used = sum(num_blocks_for(by_id[i].num_tokens, bs) for i in plan.admit)
    assert used <= left and len(plan.run) + len(plan.admit) <= max(max_batch, len(plan.run))
    if len(plan.admit) < len(queue):
        nxt = queue[len(plan.admit)]
        assert len(plan.run) + len(plan.admit) >= max_batch or used + num_blocks_for(nxt.num_tokens, bs) > left
    assert not set(plan.admit) & set(plan.preempt)


def test_poisson_trace_is_seeded_and_has_the_asked_shape():
    from infopt.llm.traces import poisson_trace
    from infopt.llm.tokenizer import BOS

    text = "def f(x):\n    return x + 1\n" * 200
    a = poisson_trace(50, rate_per_s=10.0, seed=3, prompt_len=(5, 20), output_len=(2, 9), text=text)
    b = poisson_trace(50, rate_per_s=10.0, seed=3, prompt_len=(5, 20), output_len=(2, 9), text=text)
    c = poisson_trace(50, rate_per_s=10.0, seed=4, prompt_len=(5, 20), output_len=(2, 9), text=text)
    assert a == b and a != c
    arr = [r.arrival_s for r in a]
    assert arr == sorted(arr) and arr[0] > 0
    assert 0.05 < np.mean(np.diff([0.0, *arr])) < 0.2          # mean gap 1 / rate = 0.1 s
    assert all(5 <= len(r.prompt_ids) <= 20 and 2 <= r.max_new_tokens <= 9 for r in a)
    assert all(r.prompt_ids[0] == BOS and bytes(r.prompt_ids[1:]).decode() in text for r in a)
    assert [r.req_id for r in a] == list(range(50))
    assert all(r.arrival_s == 0 for r in poisson_trace(5, float("inf"), text=text))
    with pytest.raises(ValueError, match="prompt_len"):
        poisson_trace(3, 1.0, prompt_len=(10, 5), text=text)
    with pytest.raises(ValueError, match="rate_per_s"):
        poisson_trace(3, 0.0, text=text)
