"""The serving engines: batching, chunked prefill and preemption never change a request's tokens, blocks all come
back, the schedule obeys its limits, and the cost-model simulation takes exactly the real run's decisions."""
from __future__ import annotations

import pytest
import torch

from infopt.llm.engine import ContinuousEngine, StaticEngine
from infopt.llm.run_stats import CostModel, fit_cost_model
from infopt.llm.model import TARGET_CONFIG, TinyLlama
from infopt.llm.traces import Request, poisson_trace

TEXT = "def add(a, b):\n    return a + b\n\nclass Point:\n    x: int = 0\n    y: int = 0\n" * 40
BS = 4
# a modelled clock makes every schedule deterministic (tokens never depend on it; which step does what does)
COST = CostModel(decode_step_s=5e-3, decode_seq_s=5e-4, prefill_call_s=2e-3, prefill_token_s=1e-4)


@pytest.fixture(scope="module")
def model():
    """A random-init target with weights scaled up: its greedy tokens are chaotic, so any K/V put in the wrong
    slot, or any token fed at the wrong position, changes them."""
    torch.set_num_threads(1)
    m = TinyLlama(TARGET_CONFIG, seed=0).eval()
    with torch.no_grad():
        for p in m.parameters():
            if p.ndim == 2:
                p.mul_(8)
    return m


@pytest.fixture(scope="module")
def trace():
    return poisson_trace(12, rate_per_s=200.0, seed=1, prompt_len=(3, 14), output_len=(1, 9), text=TEXT)


def reference(model, trace):
    """Each request's own greedy tokens, recomputed from scratch without any cache."""
    out = {}
    with torch.inference_mode():
        for r in trace:
            toks = list(r.prompt_ids)
            for _ in range(r.max_new_tokens):
                toks.append(int(model(torch.tensor([toks]))[0, -1].argmax()))
            out[r.req_id] = toks[len(r.prompt_ids):]
    assert len({tuple(v) for v in out.values() if len(v) > 2}) > 3, "the reference tokens are too uniform to test"
    return out


@pytest.fixture(scope="module")
def expected(model, trace):
    return reference(model, trace)


@pytest.fixture(scope="module")
def crowd(model):
    """Everyone at once, long outputs: in 7 blocks of 4 tokens the running sequences outgrow the cache."""
    tr = poisson_trace(8, rate_per_s=float("inf"), seed=5, prompt_len=(3, 8), output_len=(8, 14), text=TEXT)
    return tr, reference(model, tr)


def _check_run(engine, st, trace, expected):
    assert st.outputs() == expected
    assert engine.cache.blocks_used == 0 and engine.cache.swapped_ids == [] and engine.cache.seq_ids == []
    for r in st.requests:
        assert r.arrival_s <= r.first_token_s <= r.finish_s
    assert st.generated_tokens == sum(r.max_new_tokens for r in trace)
    assert st.peak_blocks <= engine.num_blocks


def test_continuous_batching_keeps_every_requests_tokens(model, trace, expected):
    e = ContinuousEngine(model, num_blocks=64, block_size=BS, max_batch=6)  # the measured wall clock
    st = e.run(trace)
    _check_run(e, st, trace, expected)
    assert st.preemptions == 0
    assert all(len(s.decoded) + len([i for i in s.prefilled if i not in s.decoded]) <= 6 for s in st.steps)
    assert all(len(s.tables) <= 6 for s in st.steps)
    st = ContinuousEngine(model, num_blocks=64, block_size=BS, max_batch=6, cost=COST).run(trace)
    assert st.outputs() == expected
    assert max(len(s.decoded) for s in st.steps) > 1, "no step decoded a batch"


@pytest.mark.parametrize("preemption", ["recompute", "swap"])
def test_preemption_when_blocks_are_scarce_keeps_tokens(model, crowd, preemption):
    trace, expected = crowd
    e = ContinuousEngine(model, num_blocks=7, block_size=BS, max_batch=8, preemption=preemption, cost=COST)
    st = e.run(trace)
    _check_run(e, st, trace, expected)
    assert st.preemptions > 0 and sum(r.preemptions for r in st.requests) == st.preemptions
    assert max(len(s.preempted) for s in st.steps) >= 1
    if preemption == "swap":
        assert any(s.swapped for s in st.steps)
    # a sequence preempted in a step is never admitted in that step
    assert all(not set(s.preempted) & set(s.admitted) for s in st.steps)


def test_chunked_prefill_obeys_the_token_budget(model, trace, expected):
    e = ContinuousEngine(model, num_blocks=64, block_size=BS, max_batch=6, token_budget=5, cost=COST)
    st = e.run(trace)
    _check_run(e, st, trace, expected)
    assert all(sum(s.prefilled.values()) <= max(0, 5 - len(s.decoded)) for s in st.steps)
    assert any(0 < n < len(next(r for r in trace if r.req_id == i).prompt_ids)
               for s in st.steps for i, n in s.prefilled.items()), "no prompt was split into chunks"


def test_static_batching_runs_each_batch_to_completion(model, trace, expected):
    e = StaticEngine(model, num_blocks=64, block_size=BS, batch_size=4, cost=COST)
    st = e.run(trace)
    _check_run(e, st, trace, expected)
    batches = [s.admitted for s in st.steps if s.admitted]
    assert [len(b) for b in batches] == [4, 4, 4]
    running: set[int] = set()
    for s in st.steps:  # nothing is admitted while a batch still runs
        if s.admitted:
            assert not running
            running = set(s.admitted)
        running -= set(s.finished)


def test_simulation_takes_the_real_runs_decisions(model, trace):
    """With the same cost-model clock, the engine without a model makes exactly the real engine's step decisions
    and block tables: the simulation is the same scheduler and cache, minus the arithmetic."""
    cost = CostModel(decode_step_s=1e-3, decode_seq_s=2e-4, prefill_call_s=5e-4, prefill_token_s=1e-4)
    for kw in (dict(preemption="recompute"), dict(preemption="swap"), dict(token_budget=6)):
        real = ContinuousEngine(model, num_blocks=7, block_size=BS, max_batch=5, cost=cost, **kw).run(trace)
        sim = ContinuousEngine(None, num_blocks=7, block_size=BS, max_batch=5, cost=cost, **kw).run(trace)
        key = [(s.decoded, s.prefilled, s.admitted, s.preempted, s.finished, s.tables, s.clock_s) for s in real.steps]
        assert key == [(s.decoded, s.prefilled, s.admitted, s.preempted, s.finished, s.tables, s.clock_s)
                       for s in sim.steps], kw
        assert real.summary() == sim.summary()


def test_fit_cost_model_recovers_a_known_model():
    cost = CostModel(decode_step_s=2e-3, decode_seq_s=3e-4, prefill_call_s=1e-3, prefill_token_s=5e-5)
    tr = poisson_trace(30, rate_per_s=100.0, seed=2, prompt_len=(3, 40), output_len=(1, 12), text=TEXT)
    st = ContinuousEngine(None, num_blocks=40, block_size=BS, max_batch=6, token_budget=16, cost=cost).run(tr)
    fit = fit_cost_model(st)
    for f in ("decode_step_s", "decode_seq_s", "prefill_call_s", "prefill_token_s"):
        assert getattr(fit, f) == pytest.approx(getattr(cost, f), rel=1e-6, abs=1e-9), f


def test_more_batch_gives_more_simulated_throughput():
    cost = CostModel(decode_step_s=5e-3, decode_seq_s=1e-4, prefill_call_s=1e-3, prefill_token_s=2e-5)
    tr = poisson_trace(60, rate_per_s=400.0, seed=3, prompt_len=(8, 40), output_len=(4, 30), text=TEXT)
    tput = [ContinuousEngine(None, 400, BS, max_batch=b, cost=cost).run(tr).throughput for b in (1, 4, 16)]
    assert tput[0] < tput[1] < tput[2]


def test_busy_fraction_queued_fraction_and_mean_batch_say_who_sets_the_pace():
    """An engine fed faster than it serves is busy all the time; one fed slowly waits between arrivals."""
    cost = CostModel(decode_step_s=5e-3, decode_seq_s=1e-4, prefill_call_s=1e-3, prefill_token_s=2e-5)
    runs = {rate: ContinuousEngine(None, 400, BS, max_batch=8, cost=cost).run(
        poisson_trace(40, rate_per_s=rate, seed=3, prompt_len=(8, 40), output_len=(4, 30), text=TEXT))
        for rate in (float("inf"), 2.0)}
    for st in runs.values():
        assert st.busy_fraction == pytest.approx(sum(s.seconds for s in st.steps) / st.makespan_s)
        assert st.summary()["busy_fraction"] == st.busy_fraction
    assert runs[float("inf")].busy_fraction == pytest.approx(1.0, abs=1e-9)
    assert runs[2.0].busy_fraction < 0.2
    # all at once: requests queue behind the batch limit of 8, and the steps run full; trickling in: neither
    crowded, sparse = runs[float("inf")], runs[2.0]
    assert crowded.queued_fraction > 0.5 and sparse.queued_fraction == 0.0
    assert crowded.mean_batch > 6 and sparse.mean_batch < 2
    assert crowded.mean_batch == pytest.approx(
        sum(len(s.decoded) for s in crowded.steps if s.decoded) / sum(1 for s in crowded.steps if s.decoded))


def test_bad_input_is_named(model):
    with pytest.raises(ValueError, match="preemption"):
        ContinuousEngine(model, 8, BS, preemption="drop")
    with pytest.raises(ValueError, match="cost"):
        ContinuousEngine(None, 8, BS)
    big = [Request(0, 0.0, list(range(1, 40)), 4)]
    with pytest.raises(ValueError, match="more blocks"):
        ContinuousEngine(model, 3, BS).run(big)
    with pytest.raises(ValueError, match="max_seq_len"):
        ContinuousEngine(model, 3, BS).run([Request(0, 0.0, [1] * 500, 100)])
    with pytest.raises(ValueError, match="req_id"):
        ContinuousEngine(model, 8, BS).run([Request(0, 0.0, [1, 2], 1), Request(0, 0.1, [1, 2], 1)])


def test_disaggregated_prefill_decode():
    """Every request is served whole; TTFT comes from the prefill side (a slower link leaves it alone and slows
    TPOT); with prefills heavy enough to stall colocated decodes, splitting the machines cuts the p99 TPOT."""
    from dataclasses import replace

    from infopt.llm.disaggregated import compare_disaggregated, simulate_disaggregated

    cost = CostModel(decode_step_s=4e-3, decode_seq_s=2e-4, prefill_call_s=2e-3, prefill_token_s=2e-4,
                     kv_bytes_per_token=2048, link_bytes_per_s=1e9)
    tr = poisson_trace(40, rate_per_s=20.0, seed=0, prompt_len=(32, 200), output_len=(1, 40), text=TEXT)
    fast = simulate_disaggregated(tr, cost, num_blocks=200)
    slow = simulate_disaggregated(tr, replace(cost, link_bytes_per_s=1e6), num_blocks=200)
    assert [len(r.tokens) for r in fast.requests] == [r.max_new_tokens for r in tr]
    assert [r.first_token_s for r in fast.requests] == [r.first_token_s for r in slow.requests]
    assert slow.summary()["tpot_p50"] > fast.summary()["tpot_p50"]
    moved = [r for r in slow.requests if len(r.tokens) > 1]
    # the first decode cannot start before the cache has crossed the link
    assert all(r.finish_s - r.first_token_s >= 2048 * r.prompt_len / 1e6 for r in moved)
    res = compare_disaggregated(tr, cost, machines=2, num_blocks=200, max_batch=32, token_budget=64)
    assert set(res) == {"colocated", "colocated_chunked", "disaggregated"}
    assert res["disaggregated"]["tpot_p99"] < res["colocated"]["tpot_p99"]
    with pytest.raises(ValueError, match="2 machines"):
        compare_disaggregated(tr, cost, machines=1)


def test_hf_static_generate_is_the_same_greedy_in_static_batches(model, trace, expected):
    """transformers' generate with left padding gives each request its own greedy tokens; the requests of one
    static batch get their first token together, and a batch starts only when its last member has arrived."""
    from infopt.llm.hf_baseline import hf_static_generate

    st = hf_static_generate(model, trace, batch_size=5)
    assert st.outputs() == expected
    order = sorted(trace, key=lambda r: r.arrival_s)
    by_id = {r.req_id: r for r in st.requests}
    for start in range(0, len(order), 5):
        batch = [by_id[r.req_id] for r in order[start:start + 5]]
        assert len({r.first_token_s for r in batch}) == 1
        assert batch[0].first_token_s > max(r.arrival_s for r in batch)
        assert all(r.first_token_s <= r.finish_s for r in batch)
    with pytest.raises(ValueError, match="batch_size"):
        hf_static_generate(model, trace, 0)
