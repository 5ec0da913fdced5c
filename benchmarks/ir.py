"""Unit 01 benchmark: ONNX import time and the numpy interpreter against onnxruntime, side by side.

- resnet18_import_s: ``from_onnx`` on the exported ResNet-18 (batch 1, 224x224, constant folding on):
  checker + ONNX shape inference + typing every value; median over --repeats (export not counted).
- interp_over_ort_latency: our interpreter's latency over onnxruntime's on that model, one thread
  each (ORT intra/inter-op threads = 1; numpy/BLAS limited to 1 with threadpoolctl), runs interleaved,
  ratio of the medians. The same ratio is shown for ResNet-18 with its BatchNorms kept and for the
  transformer block.
- max_rel_err_vs_ort: the largest max|ours - ort| / max|ort| over --repeats fresh random inputs, all models.

    python benchmarks/ir.py [--repeats 7] [--json]
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def _session(model):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def bench_model(label: str, model, shape: tuple[int, ...], repeats: int, rng) -> dict:
    """Import time, interleaved latencies (ours vs ORT) and the worst relative error on one model."""
    from infopt.ir.interpreter import run_graph
    from infopt.ir.onnx_io import from_onnx

    imports = [_timed(lambda: from_onnx(model)) for _ in range(repeats)]
    graph = from_onnx(model)
    sess = _session(model)
    out_name = graph.outputs[0]
    ours_t, ort_t, errs = [], [], []
    warm = rng.standard_normal(shape).astype(np.float32)
    run_graph(graph, {"input": warm})
    sess.run(None, {"input": warm})
    for i in range(repeats):
        x = rng.standard_normal(shape).astype(np.float32)
        res: dict = {}
        pair = [("ours", lambda: res.__setitem__("ours", run_graph(graph, {"input": x})[out_name])),
                ("ort", lambda: res.__setitem__("ort", sess.run(None, {"input": x})[0]))]
        for name, fn in (pair if i % 2 == 0 else pair[::-1]):  # alternate who goes first
            (ours_t if name == "ours" else ort_t).append(_timed(fn))
        errs.append(float(np.abs(res["ours"] - res["ort"]).max() / np.abs(res["ort"]).max()))
    return {
        "label": label, "nodes": len(graph.nodes), "import_s": float(np.median(imports)),
        "ours_ms": 1e3 * float(np.median(ours_t)), "ort_ms": 1e3 * float(np.median(ort_t)),
        "ratio": float(np.median(ours_t) / np.median(ort_t)), "max_rel_err": max(errs),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--json", action="store_true", help="print exactly one JSON object")
    args = ap.parse_args()
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")
    from threadpoolctl import threadpool_limits

    from infopt.models import resnet18_onnx, transformer_block_onnx

    rng = np.random.default_rng(0)
    models = [
        ("resnet18 (BN folded)", resnet18_onnx(do_constant_folding=True), (1, 3, 224, 224)),
        ("resnet18 (BN kept)", resnet18_onnx(do_constant_folding=False), (1, 3, 224, 224)),
        ("transformer block", transformer_block_onnx(), (1, 16, 64)),
    ]
    with threadpool_limits(limits=1):
        rows = [bench_model(label, m, shape, args.repeats, rng) for label, m, shape in models]
    main_row = rows[0]
    result = {
        "resnet18_import_s": main_row["import_s"],
        "interp_over_ort_latency": main_row["ratio"],
        "max_rel_err_vs_ort": max(r["max_rel_err"] for r in rows),
        "resnet18_bn_kept_interp_over_ort_latency": rows[1]["ratio"],
        "transformer_interp_over_ort_latency": rows[2]["ratio"],
        "repeats": args.repeats,
    }
    if args.json:
        print(json.dumps(result))
        return
    print(f"ONNX import and numpy interpreter vs onnxruntime (one thread each, median of {args.repeats}, interleaved)")
    print(f"{'model':24s} {'nodes':>5s} {'import s':>9s} {'ours ms':>9s} {'ort ms':>8s} {'ours/ort':>9s} {'max rel err':>12s}")
    for r in rows:
        print(f"{r['label']:24s} {r['nodes']:5d} {r['import_s']:9.3f} {r['ours_ms']:9.1f} {r['ort_ms']:8.1f} "
              f"{r['ratio']:9.2f} {r['max_rel_err']:12.2e}")


if __name__ == "__main__":
    main()
