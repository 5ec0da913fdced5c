"""Unit 02 benchmark: our pass pipeline on ResNet-18 against onnxruntime's own graph optimizer, side by side.

ResNet-18 (batch 1, 224x224) exported with ``do_constant_folding=False`` (BatchNorm nodes kept) goes through
``infopt.passes.default_pipeline(nchwc=True)`` (folding, fusion, then the blocked NCHWc layout); the result is
exported back to ONNX (FusedConv as com.microsoft.FusedConv, NCHWc ops as com.microsoft.nchwc ops).
- resnet18_nodes_before / _after: graph nodes before and after our pipeline.
- ort_kernels_ours: kernels onnxruntime executes (its profiler) for our graph under ORT_DISABLE_ALL;
  ort_kernels_ort_all / _ort_extended: for the original under ORT_ENABLE_ALL / ORT_ENABLE_EXTENDED.
- latency_ours_over_ort_extended / _over_ort_all: our graph under ORT_DISABLE_ALL over the original under
  ORT_ENABLE_EXTENDED / ORT_ENABLE_ALL; one thread each, runs interleaved (order rotated), median of the
  per-round ratios (the table also shows each variant's median time).
  The same ratios for our pipeline without the layout pass: latency_fusion_only_over_ort_extended / _all.
- memplan_peak_over_lower_bound / _over_no_reuse: the arena of our memory plan for the optimized ResNet-18.
- resnet50_pipeline_s: the whole pipeline (with the verifier after each pass) on ResNet-50 (224x224), median.
- hfusion_merged_over_separate: three Q/K/V-style MatMuls of one (tokens, hidden) input merged by HorizontalFusion
  into one wide MatMul + Split, over the three separate, in onnxruntime (one thread, interleaved, paired median),
  for a decode step (1 x 1024) and a prefill (256 x 256).

    python benchmarks/passes.py [--repeats 15] [--json]
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np


def measure(repeats: int) -> dict:
    """Run every measurement; returns the figures (see the module docstring)."""
    from infopt.ir.onnx_io import from_onnx
    from infopt.models import resnet18_onnx, resnet50_onnx
    from infopt.passes import default_pipeline, plan_memory
    from infopt.passes.export import export_optimized
    from infopt.runtime.onnxruntime_session import ort_kernel_count, ort_run, ort_session
    from infopt.passes.rewrite import max_relative_error

    original = resnet18_onnx(do_constant_folding=False)
    graph = from_onnx(original)
    fused = default_pipeline().run(graph).graph
    result = default_pipeline(nchwc=True).run(graph)
    ours = export_optimized(result.graph, "ort")
    rng = np.random.default_rng(0)
    feeds = {graph.inputs[0]: rng.standard_normal(graph.type_of(graph.inputs[0]).shape).astype(np.float32)}
    err = max_relative_error(ort_run(ours, feeds)[0], ort_run(original, feeds)[0])

    variants = {
        "ours, ORT_DISABLE_ALL": (ours, "disable_all"),
        "ours w/o layout, ORT_DISABLE_ALL": (export_optimized(fused, "ort"), "disable_all"),
        "original, ORT_DISABLE_ALL": (original, "disable_all"),
        "original, ORT_ENABLE_EXTENDED": (original, "extended"),
        "original, ORT_ENABLE_ALL": (original, "all"),
    }
    sessions = {k: ort_session(m, level, threads=1) for k, (m, level) in variants.items()}
    times: dict[str, list[float]] = {k: [] for k in variants}
    names = list(variants)
    for k in names:  # warm-up
        sessions[k].run(None, feeds)
    for i in range(repeats):
        for k in names[i % len(names):] + names[: i % len(names)]:
            t0 = time.perf_counter()
            sessions[k].run(None, feeds)
            times[k].append(time.perf_counter() - t0)
    med = {k: float(np.median(v)) for k, v in times.items()}

    def paired(a: str, b: str) -> float:
        """Median over rounds of time(a) / time(b) in the same round (robust to load that drifts)."""
        return float(np.median(np.array(times[a]) / np.array(times[b])))

    kernels = {k: ort_kernel_count(m, feeds, level) for k, (m, level) in variants.items()}

    plan = plan_memory(fused).summary()
    g50 = from_onnx(resnet50_onnx(do_constant_folding=False))
    pipe_s = []
    for _ in range(3):
        t0 = time.perf_counter()
        default_pipeline().run(g50)
        pipe_s.append(time.perf_counter() - t0)
    return {
        "resnet18_nodes_before": len(graph),
        "resnet18_nodes_after": len(result.graph),
        "resnet18_nodes_after_fusion_only": len(fused),
        "ort_kernels_fusion_only": kernels["ours w/o layout, ORT_DISABLE_ALL"],
        "ort_kernels_original": kernels["original, ORT_DISABLE_ALL"],
        "ort_kernels_ours": kernels["ours, ORT_DISABLE_ALL"],
        "ort_kernels_ort_extended": kernels["original, ORT_ENABLE_EXTENDED"],
        "ort_kernels_ort_all": kernels["original, ORT_ENABLE_ALL"],
        "latency_ms": {k: round(v * 1e3, 3) for k, v in med.items()},
        "latency_ours_over_original": paired("ours, ORT_DISABLE_ALL", "original, ORT_DISABLE_ALL"),
        "latency_ours_over_ort_extended": paired("ours, ORT_DISABLE_ALL", "original, ORT_ENABLE_EXTENDED"),
        "latency_ours_over_ort_all": paired("ours, ORT_DISABLE_ALL", "original, ORT_ENABLE_ALL"),
        "latency_fusion_only_over_ort_extended": paired("ours w/o layout, ORT_DISABLE_ALL", "original, ORT_ENABLE_EXTENDED"),
        "latency_fusion_only_over_ort_all": paired("ours w/o layout, ORT_DISABLE_ALL", "original, ORT_ENABLE_ALL"),
        "max_rel_err_vs_original": err,
        "memplan_peak_over_lower_bound": plan["plan_over_lower_bound"],
        "memplan_peak_over_no_reuse": plan["plan_over_no_reuse"],
        "memplan_peak_bytes": plan["plan_bytes"],
        "resnet50_nodes_before": len(g50),
        "resnet50_pipeline_s": float(np.median(pipe_s)),
        "repeats": repeats,
    }


def measure_horizontal(repeats: int, shapes: tuple[tuple[int, int], ...] = ((1, 1024), (256, 256))) -> dict:
    """Merged / separate time of three sibling projections for each (tokens, hidden) shape (see the docstring)."""
    from infopt.models import qkv_projections
    from infopt.passes import HorizontalFusion
    from infopt.passes.export import export_optimized
    from infopt.runtime.onnxruntime_session import ort_session
    from infopt.runtime.timing import interleaved, paired_ratio

    rng = np.random.default_rng(1)
    out = {}
    for tokens, hidden in shapes:
        g = qkv_projections(tokens, hidden, seed=1)
        merged = HorizontalFusion()(g)
        feeds = {"x": rng.standard_normal((tokens, hidden)).astype(np.float32)}
        sess = {k: ort_session(export_optimized(m, "onnx"), threads=1) for k, m in (("separate", g), ("merged", merged))}
        samples = interleaved({k: (lambda s=s: s.run(None, feeds)) for k, s in sess.items()}, repeats=max(repeats, 30), warmup=3)
        out[f"{tokens}x{hidden}"] = paired_ratio(samples, "merged", "separate")
    return out


def main() -> None:
    """Parse arguments, measure with BLAS limited to one thread, print the table or one JSON object."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--json", action="store_true", help="print exactly one JSON object")
    args = ap.parse_args()
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        r = measure(args.repeats)
        r["hfusion_merged_over_separate"] = measure_horizontal(args.repeats)
    if args.json:
        print(json.dumps(r))
        return
    print(f"ResNet-18 (224x224, BN kept): {r['resnet18_nodes_before']} -> {r['resnet18_nodes_after']} nodes "
          f"after our pipeline (max relative error in onnxruntime {r['max_rel_err_vs_original']:.1e})")
    print(f"{'variant':32s} {'kernels':>8s} {'median ms':>10s} {'ours / this (medians)':>22s}")
    ours = r["latency_ms"]["ours, ORT_DISABLE_ALL"]
    kern = {"ours, ORT_DISABLE_ALL": r["ort_kernels_ours"], "original, ORT_DISABLE_ALL": r["ort_kernels_original"],
            "ours w/o layout, ORT_DISABLE_ALL": r["ort_kernels_fusion_only"],
            "original, ORT_ENABLE_EXTENDED": r["ort_kernels_ort_extended"],
            "original, ORT_ENABLE_ALL": r["ort_kernels_ort_all"]}
    for k, ms in r["latency_ms"].items():
        print(f"{k:32s} {kern[k]:8d} {ms:10.2f} {ours / ms:22.3f}")
    print(f"paired ratios: ours / ORT_ENABLE_EXTENDED {r['latency_ours_over_ort_extended']:.3f}, "
          f"ours / ORT_ENABLE_ALL {r['latency_ours_over_ort_all']:.3f}; without the layout pass "
          f"{r['latency_fusion_only_over_ort_extended']:.3f} / {r['latency_fusion_only_over_ort_all']:.3f}")
    print(f"memory plan (fused graph): {r['memplan_peak_over_lower_bound']:.3f} x lower bound, "
          f"{r['memplan_peak_over_no_reuse']:.3f} x no reuse ({r['memplan_peak_bytes'] / 2**20:.2f} MiB)")
    print(f"ResNet-50 ({r['resnet50_nodes_before']} nodes): whole pipeline in {r['resnet50_pipeline_s']:.3f} s")
    print("horizontal fusion, Q/K/V MatMuls merged / separate (onnxruntime, one thread): "
          + ", ".join(f"{k} tokens x hidden {v:.2f}" for k, v in r["hfusion_merged_over_separate"].items()))


if __name__ == "__main__":
    main()
