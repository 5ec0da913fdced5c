"""Tests for infopt.widgets.passes_view: the pipeline stepper and the memory-plan chart."""
import numpy as np
import pytest

from infopt.ir import Graph, TensorType
from infopt.passes import default_pipeline, plan_memory
from infopt.widgets.passes_view import pipeline_figure, pipeline_stepper, plot_memory_plan, stats_table_html


def _graph() -> Graph:
    rng = np.random.default_rng()
    g = Graph("small")
    x = g.add_input("x", TensorType((1, 2, 5, 5)))
    w = g.add_initializer("w", rng.standard_normal((2, 2, 3, 3)).astype(np.float32))
    c = g.add_node("Conv", [x, w], {"pads": [1, 1, 1, 1]}).outputs[0]
    i = g.add_node("Identity", [c]).outputs[0]
    r = g.add_node("Relu", [i]).outputs[0]
    g.add_node("Exp", [r])  # dead
    g.outputs = [g.add_node("Sigmoid", [r]).outputs[0]]
    return g


def test_stepper_moves_through_the_snapshots():
    res = default_pipeline().run(_graph(), snapshots=True)
    box = pipeline_stepper(res)
    slider, label, fig, table = box.children
    assert slider.max == len(res.records) and "5 nodes" in label.value
    slider.value = slider.max
    assert f"{len(res.graph)} nodes" in label.value and "FusedConv" in label.value
    assert "background:#fff3c4" in table.value
    assert "after" in fig.layout.title.text


def test_figure_rings_new_nodes_and_rejects_bad_steps():
    res = default_pipeline().run(_graph(), snapshots=True)
    fused_step = next(k + 1 for k, r in enumerate(res.records) if r.pass_name == "conv_fusion" and r.changed)
    fig = pipeline_figure(res, fused_step)
    assert "conv_fusion" in fig.layout.title.text
    with pytest.raises(ValueError, match="step"):
        pipeline_figure(res, 999)
    with pytest.raises(ValueError, match="snapshots"):
        pipeline_figure(default_pipeline().run(_graph()), 0)


def test_memory_plan_chart_and_table():
    plan = plan_memory(_graph(), align=1)
    fig = plot_memory_plan(plan)
    assert "peak" in fig.layout.title.text
    xs = [v for v in fig.data[0].x if v is not None]
    assert len(xs) == 5 * len(plan.intervals)
    assert stats_table_html([]) == "<i>no passes run</i>"
