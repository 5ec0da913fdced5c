"""Every backend implements the one run protocol: built once, called with named feeds, named outputs back,
equal to the interpreter, with a report of its kernels and build time."""
from __future__ import annotations

import numpy as np
import pytest

from infopt.ir.testing import random_feeds
from infopt.runtime.backends import BACKENDS, RunReport, build


@pytest.fixture(scope="module")
def digits_cnn_graph():
    from infopt.ir.onnx_io import from_onnx
    from infopt.models import digits_cnn, export_onnx
    import torch

    model = digits_cnn(seed=0).eval()
    return from_onnx(export_onnx(model, torch.zeros(2, 1, 8, 8)))


@pytest.mark.parametrize("backend,options", [("interpreter", {}), ("compiled", {"fallback": "numpy"}),
                                             ("byoc", {}), ("onnxruntime", {"level": "all"})])
def test_every_backend_runs_the_protocol_and_agrees_with_the_interpreter(digits_cnn_graph, backend, options):
    g = digits_cnn_graph
    feeds = random_feeds(g, np.random.default_rng(0))
    ref = build(g, "interpreter")(feeds)
    runner = build(g, backend, **options)
    assert runner.name == backend and runner.graph is g
    assert isinstance(runner.report, RunReport) and runner.report.build_s >= 0
    assert runner.report.kernels, f"{backend} reports no kernels"
    out = runner(feeds)
    assert set(out) == set(g.outputs)
    for name in g.outputs:
        np.testing.assert_allclose(out[name], ref[name], rtol=2e-4, atol=2e-4, err_msg=f"{backend}: {name}")
    assert backend in runner.report.format_table()


def test_reports_say_how_each_kernel_runs(digits_cnn_graph):
    compiled = build(digits_cnn_graph, "compiled", fallback="numpy").report.counts()
    assert compiled.get("llvm", 0) >= 3, compiled
    byoc = build(digits_cnn_graph, "byoc").report.counts()
    assert byoc.get("accel", 0) >= 1, byoc
    assert set(build(digits_cnn_graph, "interpreter").report.counts()) == {"numpy"}


def test_unknown_backend_and_wrong_graph_are_refused_clearly(digits_cnn_graph):
    with pytest.raises(ValueError, match="unknown backend 'tvm'; the backends are"):
        build(digits_cnn_graph, "tvm")
    with pytest.raises(TypeError, match="takes an infopt.ir.Graph"):
        build("model.onnx", "interpreter")
    assert sorted(BACKENDS) == ["byoc", "compiled", "interpreter", "onnxruntime"]
