"""The measurements behind unit 06's explorers: fused vs unfused chains, tiled-matmul misses and GFLOP/s."""
import numpy as np

from infopt.runtime.schedule_bench import fusion_compare, tiling_stats
from infopt.schedule.cachesim import SMALL_HIERARCHY, kernel_misses
from infopt.schedule.matmul_ladder import tiled_order

rng = np.random.default_rng()


def test_tiling_stats_match_the_simulator():
    n = 16
    st = tiling_stats(n, (4, 8, 4), "jik")
    ref = kernel_misses(tiled_order(n, n, n, (4, 8, 4), "jik"), SMALL_HIERARCHY)
    assert st["L1_misses"] == ref.misses("L1") and st["L2_misses"] == ref.misses("L2")
    assert "gflops" not in st


def test_tiling_stats_times_at_a_larger_size():
    st = tiling_stats(8, (4, 4, 4), "ijk", time_n=32)
    assert st["gflops"] > 0 and st["kernel"].name.startswith("mm_tiled_ijk_4x4x4_8x8x8")


def test_fusion_compare_bytes_and_agreement():
    n = int(rng.integers(100, 5000))
    res = fusion_compare(n, ["scale", "bias", "relu", "exp"], time_it=False)
    assert res["max_abs_diff"] <= 1e-6
    assert res["loops"] == {"unfused": 4, "fused": 1}
    # unfused: (x,p0 -> t0) + (t0,p1 -> t1) + (t1 -> t2) + (t2 -> y) = 10 arrays of n floats; fused: x, p0, p1, y
    assert res["bytes"] == {"unfused": 10 * 4 * n, "fused": 4 * 4 * n}
    assert "ms" not in res


def test_fusion_compare_times_both_versions():
    res = fusion_compare(1 << 12, ["scale", "relu"], repeats=2)
    assert set(res["ms"]) == {"unfused", "fused"} and all(v > 0 for v in res["ms"].values())
