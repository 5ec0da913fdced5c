"""infopt.mlir.execute: emitted graphs lowered by mlir-opt, built by clang-19 and run equal our interpreter to 1e-4."""
import ctypes

import numpy as np
import pytest

from infopt.ir import Graph, TensorType, run_graph
from infopt.ir.testing import random_feeds, random_graph
from infopt.mlir.emit import emit_graph
from infopt.mlir.execute import compile_module, descriptor
from infopt.mlir.pipeline import MODEL_PIPELINE, lower
from tests.mlir_models import model_graph

rng = np.random.default_rng()


def _check(g: Graph, feeds=None, rtol=1e-4, weights="inline"):
    feeds = feeds or random_feeds(g, rng)
    compiled = compile_module(emit_graph(g, weights=weights))
    got = compiled(feeds)
    ref = run_graph(g, feeds)
    for k in g.outputs:
        scale = max(1.0, float(np.abs(ref[k]).max()))
        err = float(np.abs(got[k] - ref[k]).max()) / scale
        assert err <= rtol, f"output {k}: max relative error {err:.2e}"
    return compiled


@pytest.mark.parametrize("name,shape", [("mlp", (2, 64)), ("cnn", (2, 1, 8, 8)), ("transformer", (1, 16, 64))])
def test_models_compiled_through_mlir_equal_the_interpreter(name, shape):
    g = model_graph(name)
    c = _check(g, {g.inputs[0]: rng.standard_normal(shape).astype(np.float32)})
    assert set(c.report()["stages"]) == {s.name for s in MODEL_PIPELINE}


def test_resnet18_with_weights_as_arguments_equals_the_interpreter():
    g = model_graph("resnet18")
    _check(g, {g.inputs[0]: rng.standard_normal((1, 3, 32, 32)).astype(np.float32)}, weights="arguments")


@pytest.mark.parametrize("seed", [3, 11])
def test_random_elementwise_and_matmul_graphs(seed):
    _check(random_graph(seed, n_nodes=10))


def _zoo() -> Graph:
    """One graph with an output per emitter feature: broadcasts, batched matmul, Gemm options, windows, norms."""
    r = np.random.default_rng(7)
    c = lambda *s: r.standard_normal(s).astype(np.float32)  # noqa: E731
    g = Graph("zoo")
    x = g.add_input("x", TensorType((2, 3, 7, 6)))
    a = g.add_input("a", TensorType((2, 1, 4, 5)))
    b = g.add_input("b", TensorType((3, 5, 6)))
    m = g.add_input("m", TensorType((5, 4)))
    outs = []
    add = lambda *args, **kw: outs.append(g.add_node(*args, **kw).outputs[0]) or outs[-1]  # noqa: E731
    add("MatMul", [a, b])                                                     # (2,3,4,6), broadcast batch
    add("Gemm", [m, g.add_initializer("gw", c(3, 4)), g.add_initializer("gc", c(5, 1))],
        {"transB": 1, "alpha": 0.5, "beta": 2.0})
    add("Gemm", [g.add_node("Transpose", [m]).outputs[0], g.add_initializer("gbw", c(4, 3)),
                 g.add_initializer("gb", c(3))], {"transA": 1})
    add("Conv", [x, g.add_initializer("w", c(4, 3, 3, 2)), g.add_initializer("wb", c(4))],
        {"kernel_shape": [3, 2], "pads": [1, 0, 2, 1], "strides": [2, 1], "dilations": [1, 2]})
    add("MaxPool", [x], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1})
    add("GlobalAveragePool", [x])
    add("Softmax", [x], {"axis": 1})
    add("LayerNormalization", [x, g.add_initializer("s", c(6)), g.add_initializer("bb", c(6))], {"axis": -1},
        outputs=["ln"])
    add("BatchNormalization", [x, g.add_initializer("bs", c(3)), g.add_initializer("bbias", c(3)),
                               g.add_initializer("bm", c(3)), g.add_initializer("bv", np.abs(c(3)) + 0.5)])
    t = add("Transpose", [x], {"perm": [0, 2, 3, 1]})
    add("Reshape", [t, g.add_initializer("shape", np.array([2, 42, 3]))])
    add("Sigmoid", [x])
    add("Gelu", [x])
    add("Div", [x, g.add_initializer("d", np.abs(c(1, 6)) + 1.0)])
    add("Pow", [g.add_node("Exp", [x]).outputs[0], g.add_initializer("e", np.array(1.5, np.float32))])
    g.outputs = outs
    return g


def test_every_emitter_feature_equals_the_interpreter():
    _check(_zoo())


def test_a_wrong_array_is_refused_with_what_was_expected():
    c = compile_module(emit_graph(model_graph("mlp")))
    with pytest.raises(TypeError, match=r"float32\[2, 64\]"):
        c.function.call(np.zeros((3, 64), np.float32), np.zeros((2, 10), np.float32))
    with pytest.raises(KeyError, match="no value fed"):
        c({})


def test_descriptors_describe_the_array():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    d = descriptor(a)
    assert d.aligned == a.ctypes.data and list(d.sizes) == [3, 4] and list(d.strides) == [4, 1]
    assert descriptor(np.zeros((), np.float32)).offset == 0


def test_mlir19_llvm_ir_also_crosses_to_llvmlite_22():
    """The course builds MLIR 19's LLVM IR with clang-19; it also parses, verifies, optimizes and computes the same in
    llvmlite (LLVM 22) -- given a position-independent target machine: with infopt.codegen's default (non-PIC) JIT
    machine, MCJIT aborts the whole process on the 32-bit relocations of the weight globals."""
    from infopt.codegen.llvm_jit import host_info, llvm, optimize, parse_ir

    b = llvm()
    g = model_graph("mlp")
    llvm_ir = lower(emit_graph(g).text, MODEL_PIPELINE).final
    h = host_info()
    tm = b.Target.from_triple(h.triple).create_target_machine(cpu=h.cpu, features=h.features, opt=3, reloc="pic",
                                                              jit=True)
    engine = b.create_mcjit_compiler(parse_ir(optimize(llvm_ir, 3)), tm)
    engine.finalize_object()
    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(engine.get_function_address("_mlir_ciface_main"))
    x = rng.standard_normal((2, 64)).astype(np.float32)
    out = np.empty((2, 10), np.float32)
    dx, do = descriptor(x), descriptor(out)
    fn(ctypes.addressof(dx), ctypes.addressof(do))
    np.testing.assert_allclose(out, run_graph(g, {g.inputs[0]: x})[g.outputs[0]], rtol=1e-4, atol=1e-5)
