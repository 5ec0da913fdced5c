"""How fast the systolic-array simulator runs, and whether its cycle counts equal the analytic model.

Measures a 256^3 float32 matmul tiled onto 4x4, 16x16 and 32x32 arrays (vectorized mode, both dataflows,
variants interleaved, median of --repeats), the per-PE trace mode on a 4x4 array, and checks simulated
cycles == ``infopt.accel.matmul_cycles`` on random shapes. ``--json`` prints one JSON object.

    python benchmarks/systolic.py [--repeats 3] [--json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from infopt.accel import AccelConfig, matmul, matmul_cycles

SIZES = (4, 16, 32)
TARGET_16 = 1e7  # MACs per second the vectorized mode must reach on a 16x16 array


def _time(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def check_cycles(rng: np.random.Generator, trials: int = 24) -> bool:
    """Simulated cycles equal the analytic formula on random shapes, dataflows, dtypes and SRAM sizes."""
    ok = True
    for t in range(trials):
        df, dt = ("ws", "os")[t % 2], ("int8", "float32")[(t // 2) % 2]
        R, C = (int(x) for x in rng.integers(2, 9, 2))
        cfg = AccelConfig(R, C, df, dt, in_sram_bytes=4096, wt_sram_bytes=512, out_sram_bytes=2048,
                          dma_bytes_per_cycle=int(rng.integers(4, 33)), dma_setup_cycles=int(rng.integers(0, 20)))
        M, N, K = (int(x) for x in rng.integers(1, 60, 3))
        if dt == "int8":
            A = rng.integers(-128, 128, (M, K), dtype=np.int8)
            B = rng.integers(-128, 128, (K, N), dtype=np.int8)
        else:
            A = rng.standard_normal((M, K)).astype(np.float32)
            B = rng.standard_normal((K, N)).astype(np.float32)
        _, st = matmul(A, B, cfg)
        ok &= st.cycles == matmul_cycles(M, N, K, cfg)
    return bool(ok)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print one JSON object and nothing else")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    n = 256
    A = rng.standard_normal((n, n)).astype(np.float32)
    B = rng.standard_normal((n, n)).astype(np.float32)
    variants = [(R, df) for R in SIZES for df in ("ws", "os")]
    times: dict = {v: [] for v in variants}
    stats: dict = {}
    t_np = []
    for _ in range(args.repeats):  # interleave every variant in each round
        t_np.append(min(_time(lambda: A @ B) for _ in range(20)))
        for R, df in variants:
            cfg = AccelConfig(R, R, df, "float32")
            t0 = time.perf_counter()
            C, st = matmul(A, B, cfg)
            times[(R, df)].append(time.perf_counter() - t0)
            stats[(R, df)] = st
            assert np.allclose(C, A @ B, rtol=1e-3, atol=1e-3)
    macs = n ** 3
    rate = {v: macs / statistics.median(ts) for v, ts in times.items()}
    # trace mode: per-PE Python on a 4x4 array, a smaller matmul
    m = 24
    At = rng.standard_normal((m, m)).astype(np.float32)
    Bt = rng.standard_normal((m, m)).astype(np.float32)
    tt = [_time(lambda: matmul(At, Bt, AccelConfig(4, 4, "ws", "float32"), mode="trace")) for _ in range(args.repeats)]
    trace_rate = m ** 3 / statistics.median(tt)
    match = check_cycles(rng)
    result = {
        "simulated_macs_per_s": {f"{R}x{R}": round(rate[(R, "ws")]) for R in SIZES},
        "simulated_macs_per_s_os": {f"{R}x{R}": round(rate[(R, "os")]) for R in SIZES},
        "trace_mode_macs_per_s": round(trace_rate),
        "cycles_match_analytic": match,
        "target_16x16_macs_per_s": TARGET_16,
        "meets_target": rate[(16, "ws")] >= TARGET_16,
        "simulated_cycles": {f"{R}x{R}_{df}": stats[(R, df)].cycles for R, df in variants},
        "utilization": {f"{R}x{R}_{df}": round(stats[(R, df)].utilization, 4) for R, df in variants},
        "numpy_matmul_s": statistics.median(t_np),
        "repeats": args.repeats,
    }
    if args.json:
        print(json.dumps(result))
        return
    base = rate[(16, "ws")]
    print(f"256^3 float32 matmul, vectorized mode, median of {args.repeats} interleaved runs")
    print(f"{'array':>6} {'flow':>4} {'MACs/s':>12} {'vs 16x16 ws':>12} {'sim cycles':>11} {'util':>6} {'DMA MB':>7}"
          f" {'slower than numpy':>18}")
    for R, df in variants:
        st = stats[(R, df)]
        slow = statistics.median(times[(R, df)]) / statistics.median(t_np)
        print(f"{R:>3}x{R:<2} {df:>4} {rate[(R, df)]:>12.3g} {rate[(R, df)] / base:>11.2f}x {st.cycles:>11} "
              f"{st.utilization:>6.1%} {st.dma_bytes / 1e6:>7.2f} {slow:>17.0f}x")
    print(f"trace mode (per PE, 4x4, {m}^3): {trace_rate:.3g} MACs/s = {trace_rate / rate[(4, 'ws')]:.3f}x the vectorized 4x4")
    print(f"cycles match the analytic formula on random shapes: {match}")
    print(f"target >= {TARGET_16:.0e} MACs/s on 16x16: {'met' if result['meets_target'] else 'NOT met'}")


if __name__ == "__main__":
    main()
