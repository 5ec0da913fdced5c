"""The layout explorer: a 2-D CuTe layout's offsets and its logical_divide tiles, with sliders for the shape, the
strides and the tile.

``layout_figure(layout, tiler)`` is a plotly FigureWidget of two heatmaps over the layout's (row, col)
coordinates: the offset each coordinate maps to, and the tiles of ``logical_divide(layout, tiler)`` coloured (each
cell labelled with its offset and its index in the tile). ``layout_explorer()`` wires it to ipywidgets: rows,
cols, a stride menu (row-major, column-major, custom) with a custom stride pair, and the tile's rows and cols.
Views only: the numbers come from ``infopt.kernels.layout``.
"""
from __future__ import annotations

from typing import Any

PALETTE = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#eeca3b", "#b279a2", "#ff9da6", "#9d755d",
           "#bab0ac"]
STRIDE_CHOICES = ("row-major", "column-major", "custom")


def _tile_colorscale() -> list:
    n = len(PALETTE)
    cs: list = []
    for i, c in enumerate(PALETTE):
        cs += [[i / n, c], [(i + 1) / n, c]]
    return cs


def _traces(layout: Any, tiler: tuple[int, int], label: str | None = None) -> dict:
    """Everything the two heatmaps draw, and the titles."""
    from infopt.kernels.layout import divide_2d

    d = divide_2d(layout, tiler)
    rows, cols = layout.shape
    off = d.offsets.tolist()
    hover = [[f"coordinate ({i}, {j}) -> offset {off[i][j]}" for j in range(cols)] for i in range(rows)]
    tile_text = [[f"{off[i][j]}<br><sub>t{d.tile[i, j]}.{d.within[i, j]}</sub>" for j in range(cols)]
                 for i in range(rows)]
    tile_hover = [[f"({i}, {j}): tile ({d.tile_row[i, j]}, {d.tile_col[i, j]}) = #{d.tile[i, j]}, element "
                   f"{d.within[i, j]} of it; offset {off[i][j]}" for j in range(cols)] for i in range(rows)]
    note = "" if d.divides else " (partial tiles at the edge: a kernel masks them)"
    return {
        "offsets": off, "hover": hover, "text": [[str(v) for v in r] for r in off],
        "tiles": (d.tile % len(PALETTE)).tolist(), "tile_text": tile_text, "tile_hover": tile_hover,
        "title": (f"{label}: " if label else "") + f"L = {layout}, size {layout.size}, cosize {layout.cosize}"
                 f" · logical_divide(L, {tiler}) = {d.divided}{note}",
        "zmax": max(1, layout.cosize - 1),
    }


def layout_figure(layout: Any, tiler: tuple[int, int] = (2, 2), label: str | None = None, height: int = 380) -> Any:
    """A plotly FigureWidget: the offsets of a rank-2 ``layout`` and its logical_divide tiles by ``tiler`` (the
    title starts with ``label`` when given, e.g. how the strides were chosen)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    t = _traces(layout, tiler, label)
    base = make_subplots(rows=1, cols=2, horizontal_spacing=0.08,
                         subplot_titles=["offset of each (row, col)", "tiles of logical_divide (colour = tile)"])
    fig = go.FigureWidget(base)
    fig.add_trace(go.Heatmap(z=t["offsets"], text=t["text"], texttemplate="%{text}", hovertext=t["hover"],
                             hoverinfo="text", colorscale="Blues", zmin=0, zmax=t["zmax"], showscale=False,
                             xgap=2, ygap=2), row=1, col=1)
    fig.add_trace(go.Heatmap(z=t["tiles"], text=t["tile_text"], texttemplate="%{text}", hovertext=t["tile_hover"],
                             hoverinfo="text", colorscale=_tile_colorscale(), zmin=-0.5, zmax=len(PALETTE) - 0.5,
                             showscale=False, xgap=2, ygap=2), row=1, col=2)
    for c in (1, 2):
        fig.update_xaxes(title_text="col", dtick=1, showgrid=False, row=1, col=c)
        fig.update_yaxes(title_text="row" if c == 1 else None, autorange="reversed", dtick=1, showgrid=False,
                         row=1, col=c)
    fig.update_layout(title=dict(text=t["title"], font=dict(size=12)), height=height,
                      margin=dict(l=50, r=10, t=80, b=40))
    return fig


def update_layout_figure(fig: Any, layout: Any, tiler: tuple[int, int], label: str | None = None) -> None:
    """Redraw ``fig`` (from ``layout_figure``) for another layout or tiler."""
    t = _traces(layout, tiler, label)
    with fig.batch_update():
        fig.data[0].z, fig.data[0].text, fig.data[0].hovertext = t["offsets"], t["text"], t["hover"]
        fig.data[0].zmax = t["zmax"]
        fig.data[1].z, fig.data[1].text, fig.data[1].hovertext = t["tiles"], t["tile_text"], t["tile_hover"]
        fig.layout.title.text = t["title"]


def layout_explorer(rows: int = 4, cols: int = 6, tiler: tuple[int, int] = (2, 3), max_size: int = 8,
                    max_stride: int = 16) -> Any:
    """ipywidgets: sliders for a rows x cols layout, a stride menu and a custom stride pair, and the tile; every
    control redraws the figure. Moving a stride slider switches the menu to "custom"; picking row- or
    column-major sets the sliders to those strides, so "custom" starts from the strides shown (the title names
    the choice)."""
    import ipywidgets as widgets

    from infopt.kernels.layout import Layout, col_major, row_major

    slider = lambda value, lo, hi, name: widgets.IntSlider(  # noqa: E731
        value=value, min=lo, max=hi, description=name, continuous_update=True, style={"description_width": "initial"})
    ctl = {
        "rows": slider(rows, 1, max_size, "rows"), "cols": slider(cols, 1, max_size, "cols"),
        "stride": widgets.Dropdown(options=list(STRIDE_CHOICES), value="row-major", description="strides"),
        "stride_row": slider(cols, 0, max_stride, "row stride"), "stride_col": slider(1, 0, max_stride, "col stride"),
        "tile_rows": slider(tiler[0], 1, max_size, "tile rows"),
        "tile_cols": slider(tiler[1], 1, max_size, "tile cols"),
    }
    syncing = {"on": False}

    def current() -> Any:
        shape = (ctl["rows"].value, ctl["cols"].value)
        kind = ctl["stride"].value
        if kind == "row-major":
            return row_major(shape)
        if kind == "column-major":
            return col_major(shape)
        return Layout(shape, (ctl["stride_row"].value, ctl["stride_col"].value))

    fig = layout_figure(current(), (ctl["tile_rows"].value, ctl["tile_cols"].value), ctl["stride"].value)

    def redraw(*_: Any) -> None:
        lay = current()
        if ctl["stride"].value != "custom":            # show the strides the menu picked on the sliders
            syncing["on"] = True
            try:
                ctl["stride_row"].value, ctl["stride_col"].value = (min(max_stride, s) for s in lay.stride)
            finally:
                syncing["on"] = False
        update_layout_figure(fig, lay, (ctl["tile_rows"].value, ctl["tile_cols"].value), ctl["stride"].value)

    def stride_moved(_: Any) -> None:
        if syncing["on"]:
            return
        if ctl["stride"].value != "custom":
            ctl["stride"].value = "custom"                # fires redraw through the menu's observer
        else:
            redraw()

    for name in ("rows", "cols", "stride", "tile_rows", "tile_cols"):
        ctl[name].observe(redraw, names="value")
    for name in ("stride_row", "stride_col"):
        ctl[name].observe(stride_moved, names="value")
    legend = widgets.HTML("<small>left: the offset L(row, col) = row * row stride + col * col stride. right: "
                          "logical_divide(L, (tile rows, tile cols)); each cell shows its offset and "
                          "t&lt;tile&gt;.&lt;index in the tile&gt; (CuTe's column-major order)</small>")
    box = widgets.VBox([
        widgets.HBox([ctl["rows"], ctl["cols"], ctl["stride"]]),
        widgets.HBox([ctl["stride_row"], ctl["stride_col"]]),
        widgets.HBox([ctl["tile_rows"], ctl["tile_cols"]]),
        legend, fig,
    ])
    box.figure, box.controls = fig, ctl  # type: ignore[attr-defined]  # tests and notebooks drive them
    return box
