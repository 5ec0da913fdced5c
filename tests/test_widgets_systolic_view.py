"""The systolic-array views: one animation frame per simulated cycle, a slider over them, comparison bars."""
import numpy as np
import pytest

pytest.importorskip("plotly")

from infopt.accel import AccelConfig, matmul, run_tile  # noqa: E402
from infopt.widgets.systolic_view import compare_runs, systolic_animation  # noqa: E402


@pytest.mark.parametrize("dataflow", ["ws", "os"])
def test_animation_has_a_frame_and_slider_step_per_cycle(dataflow):
    rng = np.random.default_rng()
    R, C = (int(v) for v in rng.integers(2, 5, 2))
    m = int(rng.integers(1, R + 1))
    k = int(rng.integers(1, R + 1))
    a = rng.integers(-5, 6, (m, k), dtype=np.int8)
    b = rng.integers(-5, 6, (k, C), dtype=np.int8)
    trace = run_tile(a, b, AccelConfig(R, C, dataflow, "int8"), mode="trace").trace
    fig = systolic_animation(trace)
    assert len(fig.frames) == trace.cycles == len(fig.layout.sliders[0].steps)
    t = int(rng.integers(trace.cycles))
    ring = fig.frames[t].data[1]
    assert len(ring.x) == int(trace.active[t].sum())  # one ring per PE doing a useful MAC
    assert f"cycle {t}" in fig.frames[t].layout.title.text


def test_compare_runs_bars():
    A = np.ones((9, 7), np.float32)
    runs = {df: matmul(A, A.T.copy(), AccelConfig(4, 4, df, "float32"))[1] for df in ("ws", "os")}
    fig = compare_runs(runs)
    compute = fig.data[0]
    assert list(compute.x) == ["ws", "os"] and list(compute.y) == [runs["ws"].compute_cycles, runs["os"].compute_cycles]
