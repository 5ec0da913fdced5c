"""Tiling and fusion explorers: figures hold the right frames and bars, and the widgets update when a control moves."""
import numpy as np
import pytest

from infopt.runtime.schedule_bench import fusion_compare
from infopt.schedule.chains import elementwise_chain
from infopt.schedule.matmul_ladder import tiled_order
from infopt.widgets.fusion_view import fusion_explorer, fusion_figure
from infopt.widgets.tiling_view import tile_animation, tiling_explorer

rng = np.random.default_rng()


def test_tile_animation_has_three_heatmaps_and_frames():
    fig = tile_animation(tiled_order(8, 8, 8, (4, 4, 4)), frames=12)
    assert len(fig.data) == 3 and len(fig.frames) == 12
    with pytest.raises(ValueError, match="matmul"):
        tile_animation(elementwise_chain(8, ["relu"]))


def test_tiling_explorer_updates_on_slider_change():
    box = tiling_explorer(n=8, time_n=None, frames=5)
    before = box.children[1].value
    box.children[0].children[3].value = "kji"
    assert box.children[1].value and "L1 misses" in box.children[1].value
    assert isinstance(before, str)


def test_fusion_figure_draws_bytes_and_times():
    res = fusion_compare(int(rng.integers(100, 2000)), ["scale", "relu"], repeats=2)
    fig = fusion_figure(res)
    assert len(fig.data) == 2 and "fewer bytes" in fig.layout.title.text
    assert len(fusion_figure({k: v for k, v in res.items() if k != "ms"}).data) == 1


def test_fusion_explorer_builds_and_times():
    box = fusion_explorer(n=1 << 12)
    assert "fused" in box.children[2].value
