"""Unit 01 benchmark: ONNX import time and the numpy interpreter against onnxruntime, side by side.

- resnet18_import_s: ``from_onnx`` on the exported ResNet-18 (batch 1, 224x224, constant folding on):
  checker + ONNX shape inference + typing every value; median over --repeats (export not counted).
- interp_over_ort_latency: our interpreter's latency over onnxruntime's on that model, one thread
  each (ORT intra/inter-op threads = 1; numpy/BLAS limited to 1 with threadpoolctl), runs interleaved,
  ratio of the medians. The same ratio is shown for ResNet-18 with its BatchNorms kept and for the
  transformer block.
- max_rel_err_vs_ort: the largest max|ours - ort| / max|ort| over --repeats fresh random inputs, all models.
- node_test_pass_rate: ONNX's own node tests (built in memory from onnx's case definitions) for every op the
  registry claims, each through import, the interpreter, the default pipeline and export
  (``infopt.passes.conformance``): passed over the cases the IR honours; ``node_tests`` has the counts (cases
  the IR declines with a clear error, such as float8 dtypes or training-mode Dropout, are counted apart) and
  ``node_tests_by_op`` the per-op table.
- models: for each zoo model (MobileNetV3-small, ShuffleNetV2, GRU and LSTM classifiers, a ViT block) and
  exporter (TorchScript at opset 17, dynamo at opset 18): whether it imports ("import"), its relative error
  against onnxruntime, and whether ``from_onnx(to_onnx(g))`` gives back ``g`` and onnxruntime agrees on the
  re-export ("round_trip"); import seconds (export not counted).

    python benchmarks/ir.py [--repeats 7] [--parts latency,node-tests,models] [--json]
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


def zoo_status(name: str, exporter: str) -> dict:
    """Import and round-trip status of one zoo model under one exporter (errors are reported, not raised)."""
    from infopt.ir.interpreter import run_graph
    from infopt.ir.onnx_io import from_onnx, to_onnx
    from infopt.ir.verify import graph_diff
    from infopt.models import zoo_input, zoo_onnx

    row: dict = {"model": name, "exporter": exporter, "import": "", "round_trip": "", "rel_err": None,
                 "import_s": None, "opset": None}
    try:
        model = zoo_onnx(name, exporter)
    except Exception as e:  # noqa: BLE001  (the exporter failing is a status too)
        row["import"] = f"export failed: {type(e).__name__}: {e}"[:200]
        return row
    feeds = {"input": zoo_input(name)}
    ref = _session(model).run(None, feeds)[0]
    try:
        t = time.perf_counter()
        g = from_onnx(model)
        row["import_s"] = time.perf_counter() - t
        row["opset"] = g.opset
        row["rel_err"] = float(np.abs(run_graph(g, feeds)["output"] - ref).max() / np.abs(ref).max())
        row["import"] = "ok"
    except Exception as e:  # noqa: BLE001
        row["import"] = f"{type(e).__name__}: {e}"[:200]
        return row
    try:
        back = to_onnx(g)
        diffs = graph_diff(from_onnx(back), g)
        again = _session(back).run(None, feeds)[0]
        same = float(np.abs(again - ref).max() / np.abs(ref).max()) < 1e-6
        row["round_trip"] = "ok" if not diffs and same else f"differs: {diffs[:2] or 'onnxruntime disagrees'}"
    except Exception as e:  # noqa: BLE001
        row["round_trip"] = f"{type(e).__name__}: {e}"[:200]
    return row


PARTS = ("latency", "node-tests", "models")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated subset of {','.join(PARTS)}")
    ap.add_argument("--json", action="store_true", help="print exactly one JSON object")
    args = ap.parse_args()
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")
    parts = [p for p in args.parts.split(",") if p]
    if not parts or any(p not in PARTS for p in parts):
        ap.error(f"--parts takes a comma-separated subset of {','.join(PARTS)}, got {args.parts!r}")
    from threadpoolctl import threadpool_limits

    from infopt.models import resnet18_onnx, transformer_block_onnx

    result: dict = {"repeats": args.repeats}
    rows: list[dict] = []
    if "latency" in parts:
        rng = np.random.default_rng(0)
        models = [
            ("resnet18 (BN folded)", resnet18_onnx(do_constant_folding=True), (1, 3, 224, 224)),
            ("resnet18 (BN kept)", resnet18_onnx(do_constant_folding=False), (1, 3, 224, 224)),
            ("transformer block", transformer_block_onnx(), (1, 16, 64)),
        ]
        with threadpool_limits(limits=1):
            rows = [bench_model(label, m, shape, args.repeats, rng) for label, m, shape in models]
        result.update({
            "resnet18_import_s": rows[0]["import_s"],
            "interp_over_ort_latency": rows[0]["ratio"],
            "max_rel_err_vs_ort": max(r["max_rel_err"] for r in rows),
            "resnet18_bn_kept_interp_over_ort_latency": rows[1]["ratio"],
            "transformer_interp_over_ort_latency": rows[2]["ratio"],
        })
    report = None
    if "node-tests" in parts:
        from infopt.passes.conformance import run_node_tests

        t = time.perf_counter()
        report = run_node_tests()
        counts = {k: sum(r[k] for r in report.by_op().values()) for k in ("cases", "passed", "declined", "failed")}
        result.update({"node_test_pass_rate": report.pass_rate, "node_tests": counts,
                       "node_tests_by_op": report.by_op(), "node_tests_s": time.perf_counter() - t})
    zoo: list[dict] = []
    if "models" in parts:
        from infopt.models import MODELS
        from infopt.models.zoo import EXPORTERS

        zoo = [zoo_status(name, exp) for name in MODELS for exp in EXPORTERS]
        result["models"] = {f"{r['model']}/{r['exporter']}": {k: r[k] for k in ("import", "round_trip", "rel_err",
                                                                                   "import_s", "opset")} for r in zoo}
        result["models_ok"] = sum(r["import"] == "ok" and r["round_trip"] == "ok" for r in zoo)
        result["models_total"] = len(zoo)
    if args.json:
        print(json.dumps(result))
        return
    if rows:
        print(f"ONNX import and numpy interpreter vs onnxruntime (one thread each, median of {args.repeats}, "
              "interleaved)")
        print(f"{'model':24s} {'nodes':>5s} {'import s':>9s} {'ours ms':>9s} {'ort ms':>8s} {'ours/ort':>9s} "
              f"{'max rel err':>12s}")
        for r in rows:
            print(f"{r['label']:24s} {r['nodes']:5d} {r['import_s']:9.3f} {r['ours_ms']:9.1f} {r['ort_ms']:8.1f} "
                  f"{r['ratio']:9.2f} {r['max_rel_err']:12.2e}")
    if report is not None:
        c = result["node_tests"]
        print(f"\nONNX node tests ({c['cases']} cases of the claimed ops; {c['declined']} declined with a clear "
              f"error): pass rate {report.pass_rate:.1%} of the rest")
        print(report.table())
    if zoo:
        print("\nModels (import natively, match onnxruntime, round-trip through export)")
        print(f"{'model':20s} {'exporter':12s} {'opset':>5s} {'import':>7s} {'import s':>9s} {'rel err':>9s} "
              "round trip")
        for r in zoo:
            err = f"{r['rel_err']:9.1e}" if r["rel_err"] is not None else f"{'-':>9s}"
            secs = f"{r['import_s']:9.2f}" if r["import_s"] is not None else f"{'-':>9s}"
            print(f"{r['model']:20s} {r['exporter']:12s} {r['opset'] or '-':>5} {r['import'][:7]:>7s} {secs} "
                  f"{err} {r['round_trip'] or '-'}")


if __name__ == "__main__":
    main()
