"""Every backend side by side through the one run protocol (infopt.runtime.backends), on the digits CNN.

Each backend is built once (build seconds reported), called with the same feeds, checked against the interpreter
(worst relative error), and timed interleaved with the others (median of --repeats rounds, one thread each):
- <backend>_over_interpreter: latency of that backend over the numpy interpreter's, from the same rounds
- <backend>_kernels: how many kernels one call runs; <backend>_build_s: what building it cost
- <backend>_max_rel_err: worst |out - interpreter| / max|interpreter| over the outputs

    python benchmarks/backends.py [--repeats 30] [--batch 32] [--json]

Units 05 and 13 compare their backends the same way: a new backend is one class in BACKENDS.
"""
from __future__ import annotations

import argparse
import json
import os

import numpy as np

BACKEND_OPTIONS = {"interpreter": {}, "compiled": {"fallback": "numpy"}, "byoc": {}, "onnxruntime": {"level": "all"}}


def measure(repeats: int, batch: int) -> dict:
    """Build every backend on the digits CNN, check it against the interpreter and time them interleaved."""
    import torch

    from infopt.ir.onnx_io import from_onnx
    from infopt.ir.testing import random_feeds
    from infopt.models import digits_cnn, export_onnx
    from infopt.runtime.backends import build
    from infopt.runtime.timing import interleaved, paired_ratio

    torch.set_num_threads(1)
    graph = from_onnx(export_onnx(digits_cnn(seed=0).eval(), torch.zeros(batch, 1, 8, 8)))
    feeds = random_feeds(graph, np.random.default_rng(0))
    runners = {name: build(graph, name, **options) for name, options in BACKEND_OPTIONS.items()}
    ref = runners["interpreter"](feeds)
    out: dict = {"model": f"digits CNN, batch {batch}", "nodes": len(graph.nodes), "repeats": repeats}
    for name, runner in runners.items():
        got = runner(feeds)
        out[f"{name}_max_rel_err"] = max(float(np.abs(got[o] - ref[o]).max() / max(np.abs(ref[o]).max(), 1e-30))
                                         for o in graph.outputs)
        out[f"{name}_kernels"] = len(runner.report.kernels)
        out[f"{name}_build_s"] = round(runner.report.build_s, 4)
    samples = interleaved({name: (lambda r=runner: r(feeds)) for name, runner in runners.items()},
                          repeats=repeats, warmup=2)
    for name in runners:
        out[f"{name}_ms"] = round(1e3 * float(np.median(samples[name])), 3)
        out[f"{name}_over_interpreter"] = round(paired_ratio(samples, name, "interpreter"), 3)
    return out


def main() -> None:
    """Parse arguments, measure with BLAS limited to one thread, print the table or one JSON object."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--json", action="store_true", help="print exactly one JSON object")
    args = ap.parse_args()
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    res = measure(args.repeats, args.batch)
    if args.json:
        print(json.dumps(res))
        return
    print(f"{res['model']} ({res['nodes']} nodes), one thread, median of {res['repeats']} interleaved rounds")
    print(f"{'backend':12s} {'kernels':>8s} {'build s':>9s} {'ms':>9s} {'x interp':>9s} {'max rel err':>12s}")
    for name in BACKEND_OPTIONS:
        print(f"{name:12s} {res[name + '_kernels']:8d} {res[name + '_build_s']:9.3f} {res[name + '_ms']:9.3f} "
              f"{res[name + '_over_interpreter']:9.3f} {res[name + '_max_rel_err']:12.2e}")


if __name__ == "__main__":
    main()
