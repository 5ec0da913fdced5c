"""infopt.mlir.emit: graphs -> MLIR text that mlir-opt verifies and xDSL parses back; unsupported ops name themselves."""
import numpy as np
import pytest

from infopt.ir import Graph, TensorType
from infopt.mlir import emitter
from infopt.mlir.emit import MlirEmitError, emit_graph, emittable_ops
from infopt.mlir.mlir_text import dense_literal, float_literal, tensor_type
from infopt.mlir.ops_shape import reassociation
from infopt.mlir.tools import mlir_opt
from infopt.mlir.xdsl_ir import parse_module
from tests.mlir_models import model_graph

EXPECTED_OPS = {
    "Add", "BatchNormalization", "Conv", "Div", "Erf", "Exp", "Flatten", "Gelu", "Gemm", "GlobalAveragePool",
    "Identity", "LayerNormalization", "Log", "MatMul", "Max", "MaxPool", "Min", "Mul", "Neg", "Pow", "Relu",
    "Reshape", "Sigmoid", "Softmax", "Sqrt", "Squeeze", "Sub", "Tanh", "Transpose", "Unsqueeze",
}


def test_the_ops_that_emit_are_exactly_these():
    assert set(emittable_ops()) == EXPECTED_OPS


@pytest.mark.parametrize("name", ["mlp", "cnn", "transformer"])
def test_models_emit_and_mlir_opt_verifies_and_xdsl_parses_them_back(name):
    module = emit_graph(model_graph(name))
    mlir_opt(module.text, "--verify-each")          # raises MlirToolError with mlir-opt's diagnostics
    parsed = parse_module(module.text)               # xDSL: parse + verify
    names = {op.name for op in parsed.walk()}
    assert "func.func" in names and "linalg.generic" in names
    if name in ("mlp", "cnn"):
        assert "linalg.matmul" in names
    if name == "cnn":
        assert {"linalg.conv_2d_nchw_fchw", "linalg.pooling_nchw_max", "tensor.pad"} <= names
    if name == "transformer":
        assert {"linalg.generic", "linalg.transpose", "tensor.expand_shape", "math.erf"} <= names


def test_named_ops_are_used_where_they_exist():
    text = emit_graph(model_graph("cnn")).text
    assert text.count("linalg.conv_2d_nchw_fchw") == 2 and text.count("linalg.matmul") == 2
    assert "linalg.pooling_nchw_max" in text and "linalg.fill" in text


def test_an_op_without_an_emitter_fails_with_its_name():
    g = Graph("g")
    g.add_input("x", TensorType((2, 3)))
    g.outputs = g.add_node("ReduceSum", ["x"], {"keepdims": 1}, name="sum_rows").outputs
    with pytest.raises(MlirEmitError, match=r"sum_rows.*ReduceSum"):
        emit_graph(g)


def test_grouped_conv_is_refused_naming_the_attribute():
    g = Graph("g")
    g.add_input("x", TensorType((1, 4, 5, 5)))
    w = g.add_initializer("w", np.ones((4, 2, 3, 3), np.float32))
    g.outputs = g.add_node("Conv", ["x", w], {"group": 2, "kernel_shape": [3, 3]}, name="gconv").outputs
    with pytest.raises(MlirEmitError, match="gconv.*group=2"):
        emit_graph(g)


def test_integer_graphs_are_refused():
    g = Graph("g")
    g.add_input("x", TensorType((3,), "i32"))
    g.outputs = g.add_node("Relu", ["x"]).outputs
    with pytest.raises(MlirEmitError, match="i32"):
        emit_graph(g)


def test_registering_an_emitter_twice_is_an_error_unless_replaced():
    emittable_ops()
    other = lambda ctx, node: None  # noqa: E731
    with pytest.raises(ValueError, match="already registered"):
        emitter.register_emitter("Relu", other)
    saved = emitter.EMITTERS["Relu"]
    emitter.register_emitter("Relu", other, replace=True)
    emitter.register_emitter("Relu", saved, replace=True)
    assert emitter.EMITTERS["Relu"] is saved


@pytest.mark.parametrize("src,dst,gs,gd", [
    ((1, 16, 64), (16, 64), [[0, 1], [2]], [[0], [1]]),
    ((2, 32, 4, 4), (2, 512), [[0], [1, 2, 3]], [[0], [1]]),
    ((1, 16, 64), (1, 16, 4, 16), [[0], [1], [2]], [[0], [1], [2, 3]]),
    ((6, 4), (4, 6), [[0, 1]], [[0, 1]]),
    ((3, 1), (3,), [[0, 1]], [[0]]),
])
def test_reshape_groups(src, dst, gs, gd):
    assert reassociation(src, dst) == (gs, gd)


def test_reshape_of_different_sizes_is_an_error():
    with pytest.raises(MlirEmitError, match="sizes differ"):
        reassociation((2, 3), (7,))


def test_literals():
    assert tensor_type((), "f32") == "tensor<f32>" and tensor_type((2, 3), "bool") == "tensor<2x3xi1>"
    assert float_literal(-np.inf) == "0xFF800000"
    big = np.random.default_rng(0).standard_normal(40).astype(np.float32)
    hexed = dense_literal(big, "f32")
    assert hexed.startswith('dense<"0x')
    assert np.array_equal(np.frombuffer(bytes.fromhex(hexed[9:-2]), "<f4"), big)
    assert dense_literal(np.arange(4, dtype=np.float32).reshape(2, 2), "f32") == "dense<[[0.0, 1.0], [2.0, 3.0]]>"
