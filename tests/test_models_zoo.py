"""torchvision-style models in plain torch (MobileNetV3-small, ShuffleNetV2, GRU and LSTM classifiers, a ViT block)
under both torch exporters: each imports natively, matches onnxruntime, survives the default pipeline and
round-trips through export. The exports are the slow part: the tests share one xdist group (one worker)."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from infopt.ir.interpreter import run_graph
from infopt.ir.onnx_io import from_onnx, to_onnx
from infopt.ir.verify import graph_diff
from infopt.models import MODELS, zoo_input, zoo_onnx
from infopt.models.zoo import EXPORTERS
from infopt.passes import default_pipeline
from infopt.passes.export import export_optimized

pytestmark = pytest.mark.xdist_group("model_exports")


def ort_run(model, feeds) -> np.ndarray:
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]


def rel_err(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a.astype(np.float64) - b).max() / np.abs(b).max())


@pytest.mark.parametrize("exporter", sorted(EXPORTERS))
@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_imports_matches_onnxruntime_and_round_trips(name, exporter):
    m = zoo_onnx(name, exporter)
    assert m.opset_import[0].version == EXPORTERS[exporter][1]
    g = from_onnx(m)
    assert g.opset == EXPORTERS[exporter][1]
    feeds = {"input": zoo_input(name)}
    ref = ort_run(m, feeds)
    assert rel_err(run_graph(g, feeds)["output"], ref) < 1e-4  # f32 sums in another order (as for ResNet)

    back = to_onnx(g)  # at the model's own opset, checked by onnx's full checker
    assert back.opset_import[0].version == g.opset
    diffs = graph_diff(from_onnx(back), g)
    assert not diffs, f"{name} ({exporter}) round trip differs: {diffs[:5]}"
    assert rel_err(ort_run(back, feeds), ref) < 1e-6

    opt = default_pipeline().run(g).graph
    assert len(opt.nodes) <= len(g.nodes) and opt.opset == g.opset
    assert rel_err(run_graph(opt, feeds)["output"], ref) < 1e-4
    assert rel_err(ort_run(export_optimized(opt, target="onnx"), feeds), ref) < 1e-4


@pytest.mark.parametrize("name", ["gru_classifier", "lstm_classifier"])
def test_rnns_run_as_onnx_gru_and_lstm_nodes(name):
    g = from_onnx(zoo_onnx(name, "torchscript"))
    cell = "GRU" if name.startswith("gru") else "LSTM"
    nodes = [n for n in g.nodes if n.op == cell]
    assert nodes and all(g.type_of(n.outputs[1]).dtype == "f32" for n in nodes)
    if cell == "LSTM":
        assert nodes[0].attrs["direction"] == "bidirectional"


def test_exports_at_the_other_opset_too():
    """A model from one exporter exports at the other's opset, and onnxruntime agrees."""
    for name, exporter, other in (("vit_block", "dynamo", 17), ("shufflenet_v2", "torchscript", 18),
                                  ("mobilenet_v3_small", "dynamo", 17)):
        m = zoo_onnx(name, exporter)
        g = from_onnx(m)
        feeds = {"input": zoo_input(name)}
        moved = to_onnx(g, opset=other)
        assert moved.opset_import[0].version == other
        assert rel_err(ort_run(moved, feeds), ort_run(m, feeds)) < 1e-6
