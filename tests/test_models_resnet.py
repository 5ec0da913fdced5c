"""ResNet-18/50 in plain torch: structure, seeding, calibrated BatchNorm, and their ONNX exports."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
import torch

from infopt.models import resnet18, resnet18_onnx, resnet50


def _count(model, cls) -> int:
    return sum(isinstance(m, cls) for m in model.modules())


def test_resnet18_structure_and_output_shape():
    m = resnet18(num_classes=7)
    assert _count(m, torch.nn.Conv2d) == 20 and _count(m, torch.nn.BatchNorm2d) == 20
    assert sum(p.numel() for p in m.parameters()) == pytest.approx(11.18e6, rel=0.01)  # 11.7M at 1000 classes
    with torch.no_grad():
        assert m(torch.randn(2, 3, 64, 64)).shape == (2, 7)
    assert not m.training


def test_resnet50_is_bottleneck_shaped():
    m = resnet50()
    assert _count(m, torch.nn.Conv2d) == 53  # 1 stem + 16 blocks x 3 + 4 downsample
    assert sum(p.numel() for p in m.parameters()) == pytest.approx(25.56e6, rel=0.01)
    with torch.no_grad():
        assert m(torch.randn(1, 3, 64, 64)).shape == (1, 1000)


def test_same_seed_same_weights_other_seed_differs():
    a, b, c = resnet18(seed=3), resnet18(seed=3), resnet18(seed=4)
    wa, wb, wc = (m.conv1.weight.detach() for m in (a, b, c))
    assert torch.equal(wa, wb) and not torch.equal(wa, wc)
    assert torch.equal(a.bn1.running_var, b.bn1.running_var)


def test_global_rng_untouched():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    resnet18(seed=0)
    assert torch.equal(torch.rand(3), expected)


def test_batchnorm_is_not_identity_and_activations_stay_scaled():
    m = resnet18()
    assert not torch.allclose(m.bn1.running_var, torch.ones_like(m.bn1.running_var))
    with torch.no_grad():
        y = m(torch.randn(2, 3, 112, 112))
    assert torch.isfinite(y).all() and 1e-2 < y.abs().max().item() < 1e3


@pytest.mark.parametrize("folding,n_bn", [(True, 0), (False, 20)])
def test_export_constant_folding_and_batchnorm(folding, n_bn):
    """Folding makes the exporter fold eval-mode BN into the convs; without it the 20 BN nodes stay.
    With these calibrated random weights no two initializers are equal, so no Identity nodes appear."""
    m = resnet18_onnx(do_constant_folding=folding)
    ops = [n.op_type for n in m.graph.node]
    assert ops.count("BatchNormalization") == n_bn and ops.count("Conv") == 20
    assert "Identity" not in ops
    assert m.opset_import[0].version == 17


def test_exported_model_matches_torch():
    rng = np.random.default_rng()
    x = rng.standard_normal((1, 3, 224, 224)).astype(np.float32)
    with torch.no_grad():
        ref = resnet18()(torch.from_numpy(x)).numpy()
    sess = ort.InferenceSession(resnet18_onnx().SerializeToString(), providers=["CPUExecutionProvider"])
    got = sess.run(None, {"input": x})[0]
    assert np.abs(got - ref).max() / np.abs(ref).max() < 1e-4


def test_cached_export_returns_independent_copies():
    a = resnet18_onnx()
    a.graph.node[0].name = "changed"
    assert resnet18_onnx().graph.node[0].name != "changed"


def test_bad_num_classes():
    with pytest.raises(ValueError, match="num_classes"):
        resnet18(num_classes=0)
