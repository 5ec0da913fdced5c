"""Unit 08's sentences about its own measurements, written from the numbers: a CPU run can come out either way, and
the sentence beside a figure must say what that run measured (tests/test_llm_readings.py drives every branch)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence


def batching_reading(static: Any, continuous: Any, rate_per_s: float, requests: int) -> str:
    """What a static-against-continuous run on a trace of `requests` at `rate_per_s` says: whether the continuous
    engine set its own pace (requests queued behind it) or the arrivals did, and so what its throughput ratio means.
    `static` and `continuous` are RunStats."""
    ratio = continuous.throughput / static.throughput
    ttft_c, ttft_s = continuous.percentile("ttft", 50), static.percentile("ttft", 50)
    start = (f"continuous batching started requests {'sooner' if ttft_c < ttft_s else 'no sooner'} (TTFT p50 "
             f"{ttft_c * 1e3:.1f} ms against {ttft_s * 1e3:.1f} ms); ")
    if continuous.queued_fraction < 0.1:
        return start + (f"the continuous engine took each request as it arrived and its steps ran "
                        f"{continuous.mean_batch:.1f} sequences on average: {requests} requests at {rate_per_s:g}/s, "
                        f"not the engine, set its pace, so {ratio:.2f}x says little about batching")
    return start + (f"requests queued behind the continuous engine after {continuous.queued_fraction:.0%} of its "
                    f"steps: the engine, not the arrivals, set the pace, and {ratio:.2f}x compares the two ways of "
                    "batching")


def step_split_reading(decode_step_s: float, decode_seq_s: float, batch: int) -> str:
    """How a fitted decode step splits between its fixed part and its part per sequence, at `batch` sequences."""
    full = decode_step_s + batch * decode_seq_s
    one = decode_step_s + decode_seq_s
    if full <= 0:
        return "the fit found no cost per decode step (too few decode steps to fit)"
    share = decode_step_s / full
    kind = "mostly the fixed part" if share >= 0.5 else "mostly the part per sequence"
    return (f"a step of {batch} sequences costs {full / one:.1f}x a step of one; {share:.0%} of it is the fixed part "
            f"({kind})")


def sla_reading(limits: Sequence[int], sweep: Mapping[int, Mapping[str, float]]) -> str:
    """The trade-off a sweep over batch limits showed: more throughput and slower tokens with each larger batch, or
    what broke that pattern on this trace (`sweep[limit]`: a RunStats summary)."""
    tput = [sweep[b]["throughput_tok_s"] for b in limits]
    tpot = [sweep[b]["tpot_p99"] for b in limits]
    more = all(x < y for x, y in zip(tput, tput[1:]))
    slower = all(x < y for x, y in zip(tpot, tpot[1:]))
    span = (f"{tput[0]:.0f} -> {tput[-1]:.0f} tok/s and p99 TPOT {tpot[0] * 1e3:.2f} -> {tpot[-1] * 1e3:.2f} ms from "
            f"limit {limits[0]} to {limits[-1]}")
    if more and slower:
        return f"each larger batch served more and every token came slower ({span}): the target decides where to stop"
    if more:
        return f"each larger batch served more, but TPOT did not grow with it ({span}): the TPOT bound never binds"
    flat = [b for b, x, y in zip(limits[1:], tput, tput[1:]) if y <= x]
    return (f"throughput stopped growing at limit(s) {flat} ({span}): the arrivals never filled a larger batch, so "
            "raising the limit changes nothing")


def speculation_reading(k: int, cpu_draft_share: float, cpu_speedup: float, gpu_draft_share: float,
                        gpu_speedup: float) -> str:
    """Why speculation with `k` drafts did or did not pay on this CPU (a draft pass `cpu_draft_share` of a target
    pass, measured wall-time speed-up `cpu_speedup`) and in the GPU cost model (`gpu_draft_share`, `gpu_speedup`)."""
    here = (f"here it {'paid' if cpu_speedup > 1 else 'did not pay'} ({cpu_speedup:.2f}x): a draft pass costs "
            f"{cpu_draft_share:.0%} of a target pass, and {k} of them come with every verification")
    there = (f"on the GPU a draft pass is {gpu_draft_share:.0%} of a target pass and verifying {k + 1} tokens costs "
             f"what decoding 1 does, so the same acceptance "
             + (f"pays: {gpu_speedup:.2f}x" if gpu_speedup > 1 else f"does not pay there either ({gpu_speedup:.2f}x)"))
    return f"{here}; {there}"


def per_token_seconds(kv: Mapping[str, Any]) -> dict[str, float]:
    """Seconds per generated token of a KV-cache benchmark row (benchmarks/llm.py's `kv_cache`): recomputing the
    whole sequence ("none") and one cached step ("contiguous")."""
    return {m: kv["seconds"][m] / kv["new_tokens"] for m in ("none", "contiguous")}


def model_sizes_reading(bench: Mapping[str, Any]) -> str:
    """What the shipped benchmark (benchmarks/llm.py's JSON) says about the tiny model against the large one: the
    KV cache's speed-up beside what a recomputing and a cached step cost per token, and continuous batching's gain
    beside the fixed part of a fitted decode step."""
    large = bench["large"]
    kv_t, kv_l = bench["kv_cache_speedup_256"], bench["kv_cache_speedup_256_large"]
    per_tok = {"tiny": per_token_seconds(bench["kv_cache"]), "large": per_token_seconds(large["kv_cache"])}
    weights = large["weights"] / bench["weights"]
    recompute = per_tok["large"]["none"] / per_tok["tiny"]["none"]
    cached = per_tok["large"]["contiguous"] / per_tok["tiny"]["contiguous"]
    kv = (f"the KV cache saves {kv_t:.1f}x on the tiny model and {kv_l:.1f}x on the large one; {weights:.0f}x the "
          f"weights made a recomputing step {recompute:.1f}x slower and a cached step {cached:.1f}x slower")
    if cached < recompute:
        kv += (": the cached step grew less than the weights because part of it is fixed cost, while recomputing "
               "grows with the arithmetic, so the cache saves more on the bigger model")
    else:
        kv += ": the cached step grew as fast as recomputing, so the model's size did not change what the cache saves"
    fit_t, fit_l = bench["batching"]["step_fit"], large["batching"]["step_fit"]
    cb_t = bench["continuous_over_static_throughput"]
    cb_l = bench["continuous_over_static_throughput_large"]
    share_t, share_l = fit_t["fixed_share_of_full_step"], fit_l["fixed_share_of_full_step"]
    cb = (f"continuous batching serves {cb_t:.2f}x static batching's tokens per second on the tiny model and "
          f"{cb_l:.2f}x on the large one; the fixed part of a full decode step is {share_t:.0%} (tiny, batch "
          f"{fit_t['batch']}) and {share_l:.0%} (large, batch {fit_l['batch']})")
    if abs(cb_l - cb_t) <= 0.1 * max(cb_l, cb_t) and max(share_t, share_l) < 0.5:
        cb += (": about the same gain, because at both sizes most of a full step on this CPU is its part per "
               "sequence, which a fuller batch does not share")
    elif (cb_l - cb_t) * (share_l - share_t) > 0:
        cb += ": the gain follows the fixed part, which a fuller batch shares among more sequences"
    else:
        cb += ": the gain does not follow the fixed part on this run; the workload, not the step, limits it"
    return f"{kv}. {cb}"
