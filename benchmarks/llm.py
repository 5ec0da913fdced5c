"""Unit 08's benchmark: the tiny Llama served and decoded every way the unit builds, measured side by side in one
run on one thread (torch.set_num_threads(1)), HF_HUB_OFFLINE=1.

The serving workload (the batching, policy, HF and waste rows): 96 requests, Poisson arrivals at 64 req/s,
prompts uniform on 16..96 tokens, outputs chat-like (8 + an exponential tail, mean 64, clipped at 256; see
``chat_like``). Why not the earlier 32 requests at 20 req/s with uniform outputs: once the engines got fast that
trace was served as fast as it arrived (every continuous batch limit gave the same throughput, set by the last
arrival), so "throughput" measured the arrival process, not the engines; the offered load here (~4,000 tok/s)
is above what either engine serves on one thread, and 96 requests let the queue reach a steady state. Skewed
output lengths are what real chat traces look like (ShareGPT, vLLM's benchmark set) and what static batching
pays for.

Rows (issue 18's targets beside them):
- KV cache: tokens/s generating 256 tokens with a contiguous cache vs recomputing everything (target >= 5x);
- paged vs contiguous waste on the mixed workload's lengths (real caches; contiguous reserves the model's maximum
  length, max_seq_len, per sequence; also shown against the workload's maximum length; target < 5%);
- continuous vs static batching throughput at equal p99 latency: both swept over their batch limit on the same
  Poisson trace and the same KV pool (best of 2 interleaved rounds per point); matched as: static's
  best-throughput point sets the p99 end-to-end latency budget, and the continuous point with the highest
  throughput whose p99 is within that budget is compared with it (target >= 2x); chunked prefill and
  preemption (recompute, swap) on the same trace;
- speculative decoding (draft k=4, sampled at temperature 0.8; greedy too, for exactness and beside it):
  target passes vs plain decoding (target >= 1.5x fewer);
- our continuous engine vs Hugging Face ``generate`` (static batch, left padding, same model, workload and memory:
  HF's batch is the largest whose full-length KV fits our pool; target >= 2x);
- our logits vs ``LlamaForCausalLM``'s (max abs error, the issue's 1e-4);
- disaggregated prefill/decode: a cost model fitted to this run's measured engine steps drives the same scheduler
  on 2 colocated machines vs 1 prefill + 1 decode (TTFT and TPOT).

    python benchmarks/llm.py [--quick] [--json] [--out solutions/08_llm/data/bench.json]

Both the KV-cache row and the batching sweep also run on a model sized so that a step's arithmetic and weight
traffic set its time (``large_config``: 24M random weights), with the same prompt, trace and pool; each sweep
reports the cost model fitted to its matched continuous run (the fixed part of a step against the part per
sequence), which is what separates the two sizes.
"""
from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

TARGETS = {"kv_cache_speedup_256": 5.0, "paged_waste_over_contiguous": 0.05, "continuous_over_static_throughput": 2.0,
           "spec_target_pass_reduction": 1.5, "engine_over_hf_generate_throughput": 2.0,
           "hf_logits_max_abs_err": 1e-4, "kv_cache_speedup_256_large": 5.0,
           "continuous_over_static_throughput_large": 2.0}
BLOCK = 16


OUTPUT_MEAN = 64   # mean generated tokens of the serving workload (exponential tail, see chat_like)


def chat_like(trace, output_len: tuple[int, int], seed: int = 0):
    """The trace with chat-like output lengths: lo + an exponential tail of mean OUTPUT_MEAN - lo, clipped at hi.
    Real chat traces are skewed (ShareGPT, vLLM's benchmark set: most answers short, a long tail), which is what
    static batching pays for (a batch runs until its longest member finishes); uniform lengths understate it."""
    import numpy as np

    lo, hi = output_len
    rng = np.random.default_rng(seed + 1)
    lengths = np.clip(lo + rng.exponential(OUTPUT_MEAN - lo, len(trace)).round(), lo, hi).astype(int)
    return [dataclasses.replace(r, max_new_tokens=int(m)) for r, m in zip(trace, lengths)]


def bench_kv_cache(model, prompt: list[int], repeats: int, new_tokens: int = 256) -> dict:
    """Generation of ``new_tokens`` with and without a KV cache, interleaved, median seconds of each."""
    from infopt.llm.generate import generate

    secs: dict[str, list[float]] = {"none": [], "contiguous": [], "paged": []}
    toks = {}
    for _ in range(repeats):
        for mode in secs:
            r = generate(model, prompt, new_tokens, cache=mode, stop_at_eos=False, block_size=BLOCK)
            secs[mode].append(r.seconds)
            toks[mode] = r.tokens
    med = {m: statistics.median(v) for m, v in secs.items()}
    return {"new_tokens": new_tokens, "seconds": med,
            "tokens_per_s": {m: new_tokens / s for m, s in med.items()},
            "speedup": med["none"] / med["contiguous"], "paged_speedup": med["none"] / med["paged"],
            "same_tokens": toks["none"] == toks["contiguous"] == toks["paged"]}


def bench_waste(model, trace, workload_max: int) -> dict:
    """Paged vs contiguous waste for the trace's final lengths, on real caches: the contiguous cache reserves the
    model's maximum length per sequence (max_seq_len, what a cache that cannot know output lengths must reserve;
    the headline), and, stricter, the workload's maximum possible length."""
    from infopt.llm.paged import measure_waste

    lengths = [len(r.prompt_ids) + r.max_new_tokens for r in trace]
    out = {"sequences": len(lengths), "block_size": BLOCK}
    for name, max_len in (("model_max", model.config.max_seq_len), ("workload_max", workload_max)):
        w = measure_waste(model.config, lengths, max_len, BLOCK)
        out[name] = {"max_len": max_len, "paged_waste_fraction": w.paged_waste_fraction,
                     "contiguous_waste_fraction": w.contiguous_waste_fraction,
                     "paged_over_contiguous": w.paged_over_contiguous}
    return out


def _row(st) -> dict:
    return {k: round(v, 5) for k, v in st.summary().items()}


def bench_batching(model, trace, num_blocks: int, limits: list[int], repeats: int) -> dict:
    """Static and continuous engines swept over their batch limit on the same trace and pool, interleaved
    (every limit of both in each round); per configuration the round with the shortest makespan is kept (its
    throughput and its p99 together), which filters out rounds slowed by other tenants of the machine."""
    from infopt.llm.engine import ContinuousEngine, StaticEngine, fit_cost_model

    static, cont, outputs = {}, {}, {}
    for _ in range(repeats):
        for b in limits:
            st = StaticEngine(model, num_blocks, BLOCK, batch_size=b).run(trace)
            ct = ContinuousEngine(model, num_blocks, BLOCK, max_batch=b).run(trace)
            if b not in static or st.makespan_s < static[b].makespan_s:
                static[b] = st
            if b not in cont or ct.makespan_s < cont[b].makespan_s:
                cont[b] = ct
            outputs[b] = outputs.get(b, True) and st.outputs() == ct.outputs()
    best_s = max(static, key=lambda b: static[b].throughput)
    budget = static[best_s].percentile("latency", 99)
    within = [b for b in cont if cont[b].percentile("latency", 99) <= budget]
    best_c = max(within, key=lambda b: cont[b].throughput) if within else min(
        cont, key=lambda b: cont[b].percentile("latency", 99))
    fit = fit_cost_model(cont[best_c])
    full = fit.decode_step_s + best_c * fit.decode_seq_s
    return {
        "static": {b: _row(s) for b, s in static.items()}, "continuous": {b: _row(c) for b, c in cont.items()},
        "step_fit": {**dataclasses.asdict(fit), "batch": best_c,
                     "fixed_share_of_full_step": fit.decode_step_s / full if full > 0 else float("nan")},
        "static_best_batch": best_s, "continuous_matched_batch": best_c, "p99_budget_s": budget,
        "matched_within_budget": bool(within),
        "ratio": cont[best_c].throughput / static[best_s].throughput,
        "same_tokens_static_vs_continuous": all(outputs.values()),
        "runs": {"static": static, "continuous": cont},
    }


def large_config():
    """A Llama sized so that a step's arithmetic and weight traffic, not Python's per-op overhead, set its time
    (d = 512, 8 layers, GQA 8/4 heads of 64, MLP 1408, 1024 positions: 24M weights, 95 MB in fp32). Random
    weights: the timing does not depend on what the model says."""
    from infopt.llm.model import TinyConfig

    return TinyConfig(dim=512, n_layers=8, n_heads=8, n_kv_heads=4, head_dim=64, ffn_dim=1408, max_seq_len=1024)


def bench_large(prompt: list[int], trace, num_blocks: int, limits: list[int], repeats: int, new_tokens: int) -> dict:
    """The KV-cache and batching rows again, on large_config()'s model: same prompt, trace, pool and method."""
    from infopt.llm.model import TinyLlama

    model = TinyLlama(large_config(), seed=0).eval()
    kv = bench_kv_cache(model, prompt, repeats=repeats, new_tokens=new_tokens)
    batching = bench_batching(model, trace, num_blocks, limits, repeats=repeats)
    del batching["runs"]
    return {"config": dataclasses.asdict(model.config), "weights": model.num_parameters(), "kv_cache": kv,
            "batching": batching}


def bench_policies(model, trace, num_blocks: int, max_batch: int, scarce_blocks: int, budget: int,
                   whole) -> dict:
    """Chunked prefill with a token budget, and preemption by recompute and by swap in a scarce pool, against
    ``whole`` (the sweep's run at this max_batch: whole prefills, ample blocks)."""
    from infopt.llm.engine import ContinuousEngine

    reference = whole.outputs()
    runs = {
        "whole_prefill": whole,
        f"chunked_prefill_{budget}": ContinuousEngine(model, num_blocks, BLOCK, max_batch,
                                                     token_budget=budget).run(trace),
        f"recompute_{scarce_blocks}_blocks": ContinuousEngine(model, scarce_blocks, BLOCK, max_batch,
                                                             preemption="recompute").run(trace),
        f"swap_{scarce_blocks}_blocks": ContinuousEngine(model, scarce_blocks, BLOCK, max_batch,
                                                        preemption="swap").run(trace),
    }
    return {name: {**_row(st), "same_tokens": st.outputs() == reference} for name, st in runs.items()}


def bench_spec(target, prompts: list[list[int]], new_tokens: int, repeats: int) -> dict:
    from infopt.llm.model import load_model
    from infopt.llm.speculative import compare_with_plain

    from infopt.llm.sampling import SamplingParams

    draft = load_model("draft")
    # Sampled at temperature 0.8 for the headline: the tiny target's greedy text repeats itself, which flatters
    # greedy acceptance. Greedy is still run, for its exactness (outputs identical to plain greedy decoding).
    sampled = compare_with_plain(target, draft, prompts, new_tokens, k=4, params=SamplingParams(temperature=0.8),
                                 repeats=repeats)
    greedy = compare_with_plain(target, draft, prompts, new_tokens, k=4, repeats=repeats)
    return {**sampled, "greedy": greedy}


def hf_batch_for_memory(model, trace, num_blocks: int) -> int:
    """The largest static batch whose every member's full-length KV (prompt + max_new_tokens, the workload's
    longest) fits in our pool of ``num_blocks`` blocks: the same memory for both."""
    longest = max(len(r.prompt_ids) + r.max_new_tokens for r in trace)
    return max(1, (num_blocks * BLOCK) // longest)


def bench_hf(model, hf, trace, num_blocks: int, max_batch: int, ours) -> dict:
    from infopt.llm.hf_baseline import hf_static_generate

    b = hf_batch_for_memory(model, trace, num_blocks)
    st = hf_static_generate(model, trace, b, hf_model=hf)
    same = sum(st.outputs()[r] == ours.outputs()[r] for r in ours.outputs())
    return {"hf_batch_size": b, "hf": _row(st), "ours_max_batch": max_batch, "ours": _row(ours),
            "ratio": ours.throughput / st.throughput, "identical_requests": f"{same}/{len(trace)}"}


def bench_logits(model, hf, prompts: list[list[int]]) -> float:
    import torch

    err = 0.0
    with torch.inference_mode():
        for p in prompts:
            ids = torch.tensor([p])
            err = max(err, float((model(ids) - hf(ids).logits.float()).abs().max()))
    return err


def bench_disaggregated(run, model, trace) -> dict:
    from infopt.llm.disaggregated import compare_disaggregated
    from infopt.llm.run_stats import fit_cost_model
    from infopt.llm.paged import PagedKVCache

    kv = PagedKVCache(model.config, 1, BLOCK).bytes_per_token
    cost = fit_cost_model(run, kv_bytes_per_token=kv, link_bytes_per_s=10e9)
    res = compare_disaggregated(trace, cost, machines=2, num_blocks=512, block_size=BLOCK, max_batch=32,
                                token_budget=64)
    return {"cost_model": dataclasses.asdict(cost), "results": res}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a smaller workload (a smoke test, not the figures)")
    ap.add_argument("--json", action="store_true", help="print one JSON object and nothing else")
    ap.add_argument("--out", type=Path, help="also write the JSON object to this file (the notebook's figures)")
    args = ap.parse_args()

    import torch

    from infopt.llm.model import load_model
    from infopt.llm.readings import per_token_seconds
    from infopt.llm.tokenizer import ByteTokenizer
    from infopt.llm.traces import poisson_trace
    from infopt.runtime.host import machine_summary

    torch.set_num_threads(1)
    t_start = time.perf_counter()
    model = load_model("target")
    q = args.quick
    n, rate = (24, 64.0) if q else (96, 64.0)
    prompt_len, output_len = (16, 96), (8, 256)
    trace = chat_like(poisson_trace(n, rate, seed=0, prompt_len=prompt_len, output_len=output_len), output_len)
    num_blocks = 256          # 4096 token slots: the KV pool every engine gets
    limits = [4, 16] if q else [8, 16, 32]
    prompt = ByteTokenizer().encode("import os\nimport sys\n\n\ndef main(")

    kv = bench_kv_cache(model, prompt, repeats=1 if q else 2, new_tokens=64 if q else 256)
    waste = bench_waste(model, trace, prompt_len[1] + output_len[1])
    batching = bench_batching(model, trace, num_blocks, limits, repeats=1 if q else 2)
    mb = batching["continuous_matched_batch"]
    ours = batching["runs"]["continuous"][mb]
    policies = bench_policies(model, trace, num_blocks, mb, scarce_blocks=48, budget=64, whole=ours)
    spec_prompts = [r.prompt_ids for r in trace[:2 if q else 4]]
    spec = bench_spec(model, spec_prompts, 32 if q else 96, repeats=1 if q else 2)
    from infopt.llm.hf import to_hf_model

    hf_model = to_hf_model(model)    # built once, for both the generate comparison and the logits check
    hf = bench_hf(model, hf_model, trace, num_blocks, mb, ours)
    logits_err = bench_logits(model, hf_model, [r.prompt_ids for r in trace[:4]])
    disagg_trace = poisson_trace(60 if q else 200, 8.0, seed=1, prompt_len=prompt_len, output_len=(8, 96))
    disagg = bench_disaggregated(ours, model, disagg_trace)
    del batching["runs"]
    large = bench_large(prompt, trace, num_blocks, limits, repeats=1 if q else 2, new_tokens=64 if q else 256)

    result = {
        "kv_cache_speedup_256": kv["speedup"],
        "paged_waste_over_contiguous": waste["model_max"]["paged_over_contiguous"],
        "continuous_over_static_throughput": batching["ratio"],
        "spec_target_pass_reduction": spec["target_pass_reduction"],
        "engine_over_hf_generate_throughput": hf["ratio"],
        "hf_logits_max_abs_err": logits_err,
        "kv_cache_speedup_256_large": large["kv_cache"]["speedup"],
        "continuous_over_static_throughput_large": large["batching"]["ratio"],
        "targets": TARGETS,
        "weights": model.num_parameters(),
        "large": large,
        "kv_cache": kv, "paged_waste": waste, "batching": batching, "policies": policies,
        "speculative": spec, "hf_generate": hf, "disaggregated": disagg,
        "workload": {"requests": n, "rate_per_s": rate, "prompt_len": prompt_len, "output_len": output_len,
                     "output_mean": OUTPUT_MEAN, "output_lengths": "exponential tail (chat_like)",
                     "num_blocks": num_blocks, "block_size": BLOCK, "threads": 1},
        "quick": q, "seconds": time.perf_counter() - t_start,
        "when": datetime.date.today().isoformat(), "machine": machine_summary("1 thread"),
    }
    text = json.dumps(result, default=str)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    if args.json:
        print(text)
        return

    def line(name: str, fig: float, target: str, ok: bool, note: str = "") -> None:
        print(f"{name:<44} {fig:>10.4g}  {target:<10} {'met' if ok else 'NOT met':<8} {note}")

    print(f"unit 08 benchmark: tiny Llama ({model.num_parameters():,} weights), 1 thread, {n} requests at "
          f"{rate:g} req/s, prompts {prompt_len}, outputs {output_len}, {num_blocks} blocks of {BLOCK}"
          + ("  [--quick: smoke test]" if q else ""))
    print(f"{'figure':<44} {'measured':>10}  {'target':<10} {'':<8} notes")
    line(f"KV cache speed-up ({kv['new_tokens']} tokens)", kv["speedup"], ">= 5x", kv["speedup"] >= 5,
         f"{kv['tokens_per_s']['contiguous']:.0f} vs {kv['tokens_per_s']['none']:.0f} tok/s; paged "
         f"{kv['paged_speedup']:.1f}x; same tokens {kv['same_tokens']}")
    wm, ww = waste["model_max"], waste["workload_max"]
    line(f"paged waste / contiguous waste (max_len {wm['max_len']})", wm["paged_over_contiguous"], "< 0.05",
         wm["paged_over_contiguous"] < 0.05, f"paged wastes {wm['paged_waste_fraction']:.1%} of its blocks, "
         f"contiguous {wm['contiguous_waste_fraction']:.1%}; reserving the workload's max {ww['max_len']} instead: "
         f"{ww['paged_over_contiguous']:.3f}")
    b = batching
    line("continuous / static throughput at equal p99", b["ratio"], ">= 2x", b["ratio"] >= 2,
         f"static batch {b['static_best_batch']} (p99 latency {b['p99_budget_s']:.2f} s) vs continuous max_batch "
         f"{b['continuous_matched_batch']} (p99 {b['continuous'][b['continuous_matched_batch']]['latency_p99']:.2f} s)"
         + ("" if b["matched_within_budget"] else " NO continuous point within the budget: closest shown"))
    g = spec["greedy"]
    line("speculative: fewer target passes (k=4, T=0.8)", spec["target_pass_reduction"], ">= 1.5x",
         spec["target_pass_reduction"] >= 1.5, f"acceptance {spec['acceptance_rate']:.2f}, wall "
         f"{spec['wall_speedup']:.2f}x; greedy: {g['target_pass_reduction']:.2f}x fewer (repetitive text), "
         f"identical to plain greedy {g['identical_outputs']}")
    line("our engine / HF generate throughput", hf["ratio"], ">= 2x", hf["ratio"] >= 2,
         f"HF static batch {hf['hf_batch_size']} (same memory) vs our max_batch {mb}; identical requests "
         f"{hf['identical_requests']}")
    line("logits max |ours - HF|", logits_err, "<= 1e-4", logits_err <= 1e-4)
    lk, lb = large["kv_cache"], large["batching"]
    line(f"KV cache speed-up, large model ({lk['new_tokens']} tokens)", lk["speedup"], ">= 5x", lk["speedup"] >= 5,
         f"{lk['tokens_per_s']['contiguous']:.0f} vs {lk['tokens_per_s']['none']:.0f} tok/s; same tokens "
         f"{lk['same_tokens']}")
    line("continuous / static throughput, large model", lb["ratio"], ">= 2x", lb["ratio"] >= 2,
         f"static batch {lb['static_best_batch']} (p99 {lb['p99_budget_s']:.2f} s) vs continuous max_batch "
         f"{lb['continuous_matched_batch']}" + ("" if lb["matched_within_budget"] else " NO point within the budget"))
    for title, bb in (("tiny", b), ("large", lb)):
        f = bb["step_fit"]
        print(f"{title} model, decode step fitted to continuous max_batch {f['batch']}: "
              f"{f['decode_step_s'] * 1e3:.2f} ms + {f['decode_seq_s'] * 1e3:.3f} ms per sequence: the fixed part is "
              f"{f['fixed_share_of_full_step']:.0%} of a full step")
    tiny_ms = {m: 1e3 * v for m, v in per_token_seconds(kv).items()}
    large_ms = {m: 1e3 * v for m, v in per_token_seconds(lk).items()}
    w_ratio = large["weights"] / model.num_parameters()
    print(f"\nper generated token, no cache | cached step: tiny model ({model.num_parameters():,} weights) "
          f"{tiny_ms['none']:.2f} | {tiny_ms['contiguous']:.2f} ms; large model ({large['weights']:,}, {w_ratio:.0f}x "
          f"the weights) {large_ms['none']:.2f} | {large_ms['contiguous']:.2f} ms: {w_ratio:.0f}x the weights cost "
          f"{large_ms['none'] / tiny_ms['none']:.1f}x more per recomputing step and "
          f"{large_ms['contiguous'] / tiny_ms['contiguous']:.1f}x per cached step")
    for title, bb in (("tiny model", b), ("large model", lb)):
        print(f"\nbatch limit sweep, {title} (same trace, same pool): throughput tok/s | p99 latency s | p99 TTFT s | "
              "p99 TPOT ms")
        _sweep_rows(bb)
    _rest(result, policies, disagg, mb)


def _sweep_rows(b: dict) -> None:
    for name in ("static", "continuous"):
        for lim, r in b[name].items():
            print(f"  {name:<10} {lim:>3}: {r['throughput_tok_s']:>7.0f} | {r['latency_p99']:>6.2f} | "
                  f"{r['ttft_p99']:>6.2f} | {r['tpot_p99'] * 1e3:>6.1f}   peak blocks {r['peak_blocks']:.0f}")


def _rest(result: dict, policies: dict, disagg: dict, mb: int) -> None:
    print(f"\nscheduling policies at max_batch {mb}: throughput | p99 TTFT | p99 TPOT ms | preemptions | same tokens")
    for name, r in policies.items():
        print(f"  {name:<24} {r['throughput_tok_s']:>7.0f} | {r['ttft_p99']:>6.2f} | {r['tpot_p99'] * 1e3:>6.1f} | "
              f"{r['preemptions']:>4.0f} | {r['same_tokens']}")
    print("\ndisaggregated prefill/decode (cost model fitted to this run's steps; 2 machines each):")
    for name, r in disagg["results"].items():
        print(f"  {name:<18} TTFT p50/p99 {r['ttft_p50'] * 1e3:>6.1f}/{r['ttft_p99'] * 1e3:>6.1f} ms  TPOT p50/p99 "
              f"{r['tpot_p50'] * 1e3:>5.1f}/{r['tpot_p99'] * 1e3:>5.1f} ms  {r['throughput_tok_s']:>6.0f} tok/s")
    print(f"\ntotal {result['seconds']:.0f} s")


if __name__ == "__main__":
    main()
