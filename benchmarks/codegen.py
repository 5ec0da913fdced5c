"""Unit 03 benchmark: our LLVM kernels against numpy and torch, measured side by side in one process.

- fused_chain_speedup_vs_numpy: relu(x*y + x) * y on 2^22 float32 values (four elementwise ops), one
  fused kernel against the same numpy sequence (numpy time / ours), single thread.
- unfused_chain_speedup_vs_numpy: the same chain compiled node by node (four kernels, four passes).
- softmax_llvm_over_torch_time: row softmax on 4096x1024 float32, ours / torch.softmax (one thread).
- softmax_llvm_over_numpy_time: ours / a numpy softmax.
- compile_ms_per_kernel: emit + optimize (-O3) + JIT, median over fresh (uncached) kernels.
Variants are interleaved and the medians of their times are compared. ``--json`` prints one JSON object.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np


def _median_times(fns: dict, reps: int) -> dict[str, float]:
    times = {k: [] for k in fns}
    for _ in range(reps):
        for k, f in fns.items():
            t = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t)
    return {k: float(np.median(v)) for k, v in times.items()}


def bench_chain(n: int, reps: int) -> dict[str, float]:
    """The fused chain, the node-by-node chain and numpy."""
    from infopt.codegen import compile_kernel, fuse_elementwise_chain
    from infopt.ir import Graph, TensorType
    from infopt.runtime.backends import build

    g = Graph("chain")
    g.add_input("x", TensorType((n,), "f32"))
    g.add_input("y", TensorType((n,), "f32"))
    a = g.add_node("Mul", ["x", "y"]).outputs[0]
    b = g.add_node("Add", [a, "x"]).outputs[0]
    c = g.add_node("Relu", [b]).outputs[0]
    d = g.add_node("Mul", [c, "y"]).outputs[0]
    g.outputs = [d]
    kern, ins, _ = fuse_elementwise_chain(g, g.nodes, "chain4")
    fused = compile_kernel(kern)
    unfused = build(g, "compiled")  # node by node, through the one run protocol
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = np.empty_like(x)
    fused(x, y, out)
    ref = np.maximum(x * y + x, 0) * y
    assert np.allclose(out, ref, rtol=1e-6, atol=1e-6), "fused chain does not match numpy"
    t = _median_times({
        "numpy": lambda: np.maximum(x * y + x, 0) * y,
        "fused": lambda: fused(x, y, out),
        "unfused": lambda: unfused({"x": x, "y": y}),
    }, reps)
    return {"fused_chain_speedup_vs_numpy": t["numpy"] / t["fused"],
            "unfused_chain_speedup_vs_numpy": t["numpy"] / t["unfused"],
            "chain_ms_numpy": t["numpy"] * 1e3, "chain_ms_fused": t["fused"] * 1e3}


def bench_softmax(rows: int, cols: int, reps: int) -> dict[str, float]:
    """Our row softmax against torch.softmax and numpy, one thread each."""
    import torch

    from infopt.codegen import compile_kernel, softmax_kernel

    torch.set_num_threads(1)
    ck = compile_kernel(softmax_kernel("softmax_rows", (rows, cols)))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((rows, cols), dtype=np.float32) * 3
    y = np.empty_like(x)
    xt = torch.from_numpy(x)
    ck(x, y)
    assert np.allclose(y, torch.softmax(xt, -1).numpy(), rtol=1e-5, atol=1e-7), "softmax does not match torch"

    def np_softmax():
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    t = _median_times({"ours": lambda: ck(x, y), "torch": lambda: torch.softmax(xt, -1), "numpy": np_softmax}, reps)
    return {"softmax_llvm_over_torch_time": t["ours"] / t["torch"],
            "softmax_llvm_over_numpy_time": t["ours"] / t["numpy"],
            "softmax_ms_ours": t["ours"] * 1e3, "softmax_ms_torch": t["torch"] * 1e3}


def bench_compile(count: int) -> dict[str, float]:
    """Median ms to emit, optimize and JIT a fresh kernel (distinct shapes defeat the cache)."""
    from infopt.codegen import compile_kernel, softmax_kernel
    from infopt.codegen.lower_linalg import matmul_kernel
    from infopt.ir import TensorType

    seed = int(time.time() * 1e3) % 100000
    times = []
    for k in range(count):
        n = 1000 + seed + k
        kern = softmax_kernel(f"sm{k}", (8, n)) if k % 2 else matmul_kernel(
            f"mm{k}", TensorType((n, 8)), TensorType((8, 16)), TensorType((n, 16)))
        t = time.perf_counter()
        compile_kernel(kern)
        times.append(time.perf_counter() - t)
    return {"compile_ms_per_kernel": float(np.median(times)) * 1e3}


def main() -> None:
    """Run the benchmarks; print a table, or one JSON object with --json."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object and nothing else")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke test, not the targets)")
    args = ap.parse_args()
    n, rows, cols = (1 << 16, 256, 1024) if args.quick else (1 << 22, 4096, 1024)
    res: dict[str, float] = {}
    res.update(bench_chain(n, args.reps))
    res.update(bench_softmax(rows, cols, args.reps))
    res.update(bench_compile(6))
    from infopt.codegen import host_info

    if args.json:
        print(json.dumps({**{k: round(v, 4) for k, v in res.items()}, "host_cpu": host_info().cpu,
                          "chain_n": n, "softmax_shape": [rows, cols]}))
        return
    print(f"host {host_info().cpu}; chain on {n} f32, softmax {rows}x{cols} f32, one thread, medians of {args.reps}")
    print(f"{'metric':34s} {'value':>10s}  target")
    targets = {"fused_chain_speedup_vs_numpy": ">= 2", "softmax_llvm_over_torch_time": "<= 1.5"}
    for k, v in res.items():
        print(f"{k:34s} {v:10.3f}  {targets.get(k, '')}")


if __name__ == "__main__":
    main()
