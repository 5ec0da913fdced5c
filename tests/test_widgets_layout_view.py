"""The layout explorer (infopt.widgets.layout_view): its heatmaps show the offsets and the logical_divide tiles the
layout algebra computes, and every slider and the stride menu redraw the figure."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("ipywidgets")
pytest.importorskip("plotly")

from infopt.kernels.layout import Layout, divide_2d, row_major  # noqa: E402
from infopt.widgets.layout_view import layout_explorer, layout_figure  # noqa: E402


def snapshot(fig) -> tuple:
    return (tuple(map(tuple, fig.data[0].z)), tuple(map(tuple, fig.data[1].z)),
            tuple(map(tuple, fig.data[1].text)), fig.layout.title.text)


def test_layout_figure_draws_offsets_and_tiles():
    lay = Layout((4, 6), (1, 5))
    fig = layout_figure(lay, (2, 3))
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), lay.to_array())
    tiles = np.asarray(fig.data[1].z)
    np.testing.assert_array_equal(tiles, [[0, 0, 0, 2, 2, 2], [0, 0, 0, 2, 2, 2],
                                          [1, 1, 1, 3, 3, 3], [1, 1, 1, 3, 3, 3]])   # CuTe's colex tile order
    assert "((2,2),(3,2)):((1,2),(5,15))" in fig.layout.title.text
    assert fig.data[1].text[3][5].startswith(str(lay(3, 5)))


def test_partial_tiles_are_named():
    d = divide_2d(row_major((5, 6)), (2, 4))
    assert not d.divides and d.tiles == (3, 2)
    assert "partial tiles" in layout_figure(row_major((5, 6)), (2, 4)).layout.title.text


def test_every_control_redraws_the_figure():
    box = layout_explorer(rows=4, cols=6, tiler=(2, 3))
    fig, ctl = box.figure, box.controls
    moves = [("rows", 5), ("cols", 7), ("stride_row", 8), ("stride_col", 2), ("tile_rows", 3), ("tile_cols", 2),
             ("stride", "row-major"), ("stride", "column-major"), ("stride", "custom")]
    for name, value in moves:
        before = snapshot(fig)
        ctl[name].value = value
        after = snapshot(fig)
        assert after != before, f"moving {name} to {value!r} did not change the figure"
        if value != "custom":                     # "custom" starts from the strides shown: only the title says so
            assert after[:3] != before[:3], f"moving {name} to {value!r} did not change the heatmaps"
    assert fig.layout.title.text.startswith("custom: ")
    # after "custom" the sliders hold column-major's strides (1, rows): the figure is column-major's
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), Layout((5, 7), (1, 5)).to_array())


def test_stride_sliders_switch_to_custom_and_menu_sets_the_sliders():
    box = layout_explorer(rows=3, cols=4)
    ctl, fig = box.controls, box.figure
    assert (ctl["stride_row"].value, ctl["stride_col"].value) == (4, 1)
    ctl["stride_col"].value = 3
    assert ctl["stride"].value == "custom"
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), Layout((3, 4), (4, 3)).to_array())
    ctl["stride"].value = "column-major"
    assert (ctl["stride_row"].value, ctl["stride_col"].value) == (1, 3) and ctl["stride"].value == "column-major"
    ctl["rows"].value = 2
    assert ctl["stride_col"].value == 2
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), Layout((2, 4), (1, 2)).to_array())
