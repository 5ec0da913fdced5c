"""Unit 08's sentences about measurements say what the numbers say, both ways: every branch of
infopt.llm.readings on numbers that take it, and the shipped benchmark holds what the notebook reads."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from infopt.llm.readings import (batching_reading, model_sizes_reading, sla_reading, speculation_reading,
                                 step_split_reading)

BENCH = Path(__file__).resolve().parents[1] / "solutions" / "08_llm" / "data" / "bench.json"


def _run(throughput: float, queued: float, batch: float, ttft_p50: float = 0.05) -> SimpleNamespace:
    return SimpleNamespace(throughput=throughput, queued_fraction=queued, mean_batch=batch,
                           percentile=lambda metric, q: {("ttft", 50): ttft_p50}[(metric, q)])


def test_the_batching_reading_says_who_set_the_pace():
    idle = batching_reading(_run(800, 0.5, 5, 0.12), _run(840, 0.0, 5.1, 0.01), 60.0, 16)
    assert "16 requests at 60/s, not the engine, set its pace" in idle and "1.05x says little" in idle
    assert "started requests sooner (TTFT p50 10.0 ms against 120.0 ms)" in idle
    busy = batching_reading(_run(800, 0.9, 8, 0.1), _run(1600, 0.6, 8, 0.2), 200.0, 96)
    assert "queued behind the continuous engine after 60%" in busy and "2.00x compares" in busy
    assert "says little" not in busy and "no sooner" in busy


@pytest.mark.parametrize("fixed,per_seq,says", [(4e-3, 1e-4, "mostly the fixed part"),
                                                  (1e-3, 1e-3, "mostly the part per sequence")])
def test_the_step_split_names_the_larger_part(fixed, per_seq, says):
    text = step_split_reading(fixed, per_seq, 8)
    assert says in text and f"{(fixed + 8 * per_seq) / (fixed + per_seq):.1f}x a step of one" in text
    assert "no cost" in step_split_reading(0.0, 0.0, 8)


def _sweep(tput, tpot):
    return {b: {"throughput_tok_s": t, "tpot_p99": p} for b, t, p in zip((8, 16, 32, 64), tput, tpot)}


def test_the_sla_reading_follows_the_sweep():
    both = sla_reading([8, 16, 32, 64], _sweep([1800, 3000, 4100, 4600], [4e-3, 5e-3, 6.3e-3, 8.1e-3]))
    assert "every token came slower" in both and "1800 -> 4600 tok/s" in both
    flat_tpot = sla_reading([8, 16, 32, 64], _sweep([1800, 3000, 4100, 4600], [4e-3, 4e-3, 4e-3, 4e-3]))
    assert "never binds" in flat_tpot and "came slower" not in flat_tpot
    stalled = sla_reading([8, 16, 32, 64], _sweep([1800, 3000, 3000, 3000], [4e-3, 5e-3, 5e-3, 5e-3]))
    assert "stopped growing at limit(s) [32, 64]" in stalled and "came slower" not in stalled


def test_the_speculation_reading_says_whether_it_paid_here_and_there():
    text = speculation_reading(4, 0.62, 0.73, 0.15, 1.9)
    assert "did not pay (0.73x)" in text and "62% of a target pass" in text and "pays: 1.90x" in text
    text = speculation_reading(4, 0.1, 1.3, 0.15, 0.8)
    assert "here it paid (1.30x)" in text and "does not pay there either (0.80x)" in text


def _bench(kv_t=4.5, kv_l=11.6, share_t=0.5, share_l=0.2, cb_t=1.45, cb_l=1.2, large_cached_s=3.2):
    return {"kv_cache_speedup_256": kv_t, "kv_cache_speedup_256_large": kv_l,
            "continuous_over_static_throughput": cb_t, "continuous_over_static_throughput_large": cb_l,
            "weights": 800_000,
            "kv_cache": {"new_tokens": 256, "seconds": {"none": 2.0, "contiguous": 0.45}},
            "batching": {"step_fit": {"fixed_share_of_full_step": share_t, "batch": 16}},
            "large": {"weights": 24_000_000, "kv_cache": {"new_tokens": 256,
                                                          "seconds": {"none": 37.0, "contiguous": large_cached_s}},
                      "batching": {"step_fit": {"fixed_share_of_full_step": share_l, "batch": 32}}}}


def test_the_model_sizes_reading_follows_the_benchmark():
    text = model_sizes_reading(_bench())
    assert "4.5x on the tiny model and 11.6x on the large one" in text and "30x the weights" in text
    assert "saves more on the bigger model" in text          # cached 7.1x slower, recomputing 18.5x
    assert "the gain follows the fixed part" in text          # less fixed part, less gain
    same = model_sizes_reading(_bench(large_cached_s=0.45 * 40))
    assert "did not change what the cache saves" in same
    against = model_sizes_reading(_bench(cb_l=1.8))
    assert "does not follow the fixed part" in against
    alike = model_sizes_reading(_bench(cb_t=1.36, cb_l=1.38, share_t=0.28, share_l=0.23))
    assert "about the same gain" in alike and "follows" not in alike
    alike_but_fixed = model_sizes_reading(_bench(cb_t=1.36, cb_l=1.38, share_t=0.7, share_l=0.6))
    assert "about the same gain" not in alike_but_fixed


def test_the_shipped_benchmark_holds_what_the_notebook_reads():
    bench = json.loads(BENCH.read_text())
    for key in ("kv_cache_speedup_256", "continuous_over_static_throughput", "kv_cache_speedup_256_large",
                "continuous_over_static_throughput_large", "weights", "when", "machine"):
        assert key in bench, key
    assert bench["large"]["weights"] > 10 * bench["weights"]
    assert not bench["quick"], "the shipped figures come from a full run, not --quick"
    model_sizes_reading(bench)   # every key it reads is there
