"""infopt.mlir.iree: the digits CNN through iree-import-onnx, iree-compile (llvm-cpu) and iree.runtime equals
onnxruntime; its compilation phases are the twelve IREE documents; our emitter's linalg compiles with IREE too."""
import numpy as np
import pytest

from infopt.mlir.emit import emit_graph
from infopt.mlir.iree import PHASES, compile_for_cpu, dispatch_configs, expand_aliases, import_onnx
from infopt.mlir.matmul import matmul_graph


@pytest.fixture(scope="module")
def cnn():
    import torch

    from infopt.models import digits_cnn, export_onnx

    x = np.random.default_rng().standard_normal((2, 1, 8, 8)).astype(np.float32)
    proto = export_onnx(digits_cnn(), torch.from_numpy(x))
    return proto, x, compile_for_cpu(import_onnx(proto), "main_graph", "onnx", phases=True)


def test_the_cnn_through_iree_equals_onnxruntime(cnn):
    import onnxruntime as ort

    proto, x, module = cnn
    want = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
    np.testing.assert_allclose(module(x)[0], want, rtol=1e-4, atol=1e-5)
    assert module.compile_seconds > 0


def test_the_phases_are_iree_s_twelve_and_the_configurations_name_each_dispatch(cnn):
    phases = cnn[2].phases
    assert [name for _, name, _ in phases] == list(PHASES)
    text = dict((name, ir) for _, name, ir in phases)
    assert "linalg.conv_2d_nchw_fchw" in text["input"] and "linalg" in text["global-optimization"]
    assert "flow.dispatch" in text["flow"] and "llvm.func" in text["executable-targets"]
    configs = dispatch_configs(text["executable-configurations"])
    assert any("conv" in c["dispatch"] for c in configs) and any("matmul" in c["dispatch"] for c in configs)
    assert all(c["pipeline"] != "?" for c in configs)


def test_our_emitters_linalg_compiles_with_iree():
    module = emit_graph(matmul_graph(32, 48, 16))
    compiled = compile_for_cpu(module.text, "main")
    r = np.random.default_rng()
    a, b = r.standard_normal((32, 16)).astype(np.float32), r.standard_normal((16, 48)).astype(np.float32)
    np.testing.assert_allclose(compiled(a, b)[0], a @ b, rtol=1e-4, atol=1e-4)


def test_aliases_expand():
    assert expand_aliases("#c = foo<1>\nx = #c y = #cc\n#cc = bar\n").strip() == "x = foo<1> y = bar"


def test_iree_against_onnxruntime_times_the_pair_and_names_its_ratio(cnn):
    """The function unit 04's cell and benchmarks/mlir.py share: positive medians, and the paired ratio is IREE's
    time over onnxruntime's (between the ratio of the medians' extremes, never its inverse)."""
    from infopt.mlir.iree import iree_against_onnxruntime
    from infopt.runtime.onnxruntime_session import ort_session

    proto, x, module = cnn
    got = iree_against_onnxruntime(module, ort_session(proto, level="all"), x, repeats=5)
    assert set(got) == {"iree_s", "onnxruntime_s", "iree_time_over_ort_time"}
    assert got["iree_s"] > 0 and got["onnxruntime_s"] > 0
    by_medians = got["iree_s"] / got["onnxruntime_s"]
    assert 0.2 * by_medians < got["iree_time_over_ort_time"] < 5 * by_medians
