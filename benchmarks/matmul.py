"""Matmul ladder benchmark: GFLOP/s of every infopt schedule vs numpy, torch (1 thread) and tinygrad, side by side.

Usage: python benchmarks/matmul.py [--sizes 256 512 1024] [--repeats 9] [--json]

All variants at one size run round-robin in one process (``infopt.runtime.interleaved``); GFLOP/s
are medians; ratios are paired medians (per round, time of one over time of the other).
``best_over_numpy_1t_fastest_runs`` repeats the first ratio from each variant's fastest run, a
cross-check on a machine shared with other jobs (where medians mostly measure the neighbours). "best" is the fastest single-threaded infopt schedule (``packed_mt`` uses 2 threads
and is reported apart, not counted in the ratios to single-threaded libraries).
"""
from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

SINGLE = ("naive", "interchanged", "tiled", "packed")


def _peers(a: np.ndarray, b: np.ndarray) -> dict:
    """numpy, torch and tinygrad matmul callables on the same inputs (missing libraries are skipped)."""
    fns = {"numpy_1t": lambda: a @ b}
    try:
        import torch

        torch.set_num_threads(1)
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        fns["torch_1t"] = lambda: torch.matmul(ta, tb)
    except ImportError:
        pass
    try:
        from tinygrad import Device, Tensor, TinyJit

        xa, xb = Tensor(a).realize(), Tensor(b).realize()

        @TinyJit
        def tg(x, y):
            return (x @ y).realize()

        def run_tg():
            r = tg(xa, xb)
            Device[r.device].synchronize()
            return r

        for _ in range(3):  # TinyJit captures on the second call
            run_tg()
        fns["tinygrad"] = run_tg
    except Exception as e:  # noqa: BLE001 - a broken peer must not stop the benchmark
        print(f"tinygrad unavailable: {e}", file=sys.stderr)
    return fns


def bench_size(n: int, repeats: int, rng: np.random.Generator) -> tuple[dict[str, float], dict[str, list[float]]]:
    """GFLOP/s (median) of every variant at n x n x n, verified against numpy first, and the raw samples."""
    from infopt.schedule.matmul_ladder import RUNGS, matmul_rung
    from infopt.runtime import interleaved

    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    ref = a @ b
    fns = {}
    for name in RUNGS:
        r = matmul_rung(name, n, n, n, threads=2)
        out = np.empty((n, n), np.float32)
        got = r(a, b, out)
        err = float(np.max(np.abs(got - ref)) / (np.max(np.abs(ref)) + 1e-30))
        if err > 1e-4:
            raise SystemExit(f"schedule {name} is wrong at N={n}: relative error {err:.2e}")
        fns[name] = (lambda r=r, out=out: r(a, b, out))
    fns.update(_peers(a, b))
    samples = interleaved(fns, repeats=repeats, warmup=1, budget_s=6.0)
    return {k: 2 * n ** 3 / float(np.median(v)) / 1e9 for k, v in samples.items()}, samples


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print a table (or one JSON object with --json)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    from infopt.runtime import paired_ratio

    runs = {n: bench_size(n, args.repeats, rng) for n in args.sizes}
    table = {n: g for n, (g, _) in runs.items()}
    res: dict[str, dict] = {"gflops": {}, "best_schedule": {}, "best_over_numpy_1t": {}, "best_over_torch_1t": {},
                            "best_over_tinygrad": {}, "naive_to_best_speedup": {}, "packed_mt_over_packed": {},
                            "best_over_numpy_1t_fastest_runs": {}}
    for n, g in table.items():
        best = max(SINGLE, key=lambda s: g[s])
        res["gflops"][n] = {k: round(v, 2) for k, v in g.items()}
        res["best_schedule"][n] = best
        smp = runs[n][1]
        res["best_over_numpy_1t"][n] = round(paired_ratio(smp, "numpy_1t", best), 3)
        if "torch_1t" in g:
            res["best_over_torch_1t"][n] = round(paired_ratio(smp, "torch_1t", best), 3)
        if "tinygrad" in g:
            res["best_over_tinygrad"][n] = round(paired_ratio(smp, "tinygrad", best), 3)
        res["naive_to_best_speedup"][n] = round(paired_ratio(smp, "naive", best), 1)
        # the same ratio from each variant's fastest run: what the kernels do when no neighbour interferes
        res["best_over_numpy_1t_fastest_runs"][n] = round(min(smp["numpy_1t"]) / min(smp[best]), 3)
        res["packed_mt_over_packed"][n] = round(paired_ratio(smp, "packed", "packed_mt"), 2)
    if args.json:
        print(json.dumps(res))
        return 0
    names = list(next(iter(table.values())))
    print("GFLOP/s (median), float32 square matmul; numpy/torch on 1 thread, packed_mt on 2")
    print(f"{'N':>6} " + " ".join(f"{k:>12}" for k in names))
    for n, g in table.items():
        print(f"{n:>6} " + " ".join(f"{g[k]:>12.1f}" for k in names))
    print()
    for key in ("best_schedule", "best_over_numpy_1t", "best_over_numpy_1t_fastest_runs", "best_over_torch_1t",
                "best_over_tinygrad",
                "naive_to_best_speedup", "packed_mt_over_packed"):
        print(f"{key:>24}: " + ", ".join(f"N={n}: {v}" for n, v in res[key].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
