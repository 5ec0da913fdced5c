"""The op table: every op with the facts each layer registers for it (inference, compute, ONNX export, lowering,
view kind), checked against what each layer promises; the set of ops is the same whatever was imported."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import onnx
import pytest

import infopt.accel.lowering  # noqa: F401  (registers AccelCall's compute)
import infopt.codegen.graph_compile  # noqa: F401  (registers the lowerings)
from infopt.codegen.lower_elementwise import ELEMENTWISE_OPS, UnsupportedLoweringError
from infopt.codegen.lowerings import LOWERINGS, lowering
from infopt.ir import OPS, Graph, OpDef, RegistrationError, TensorType, register_compute, register_op
from infopt.ir.ops.registry import INFOPT_DOMAIN
from infopt.ir.opset import DEFAULT_OPSET, MIN_OPSET, max_opset
from infopt.widgets.graph_view import VIEW_KINDS, view_kind


def _onnx_since(op: str) -> int | None:
    for v in range(1, max_opset() + 1):
        try:
            onnx.defs.get_schema(op, v, "")
            return v
        except onnx.defs.SchemaError:
            continue
    return None


def op_table() -> list[dict]:
    """One row per op: what it has, as the layers registered it."""
    rows = []
    for name, d in sorted(OPS.items()):
        since = _onnx_since(name) if d.domain == "" else None
        if d.domain:
            export = "infopt domain" + (" (decomposes)" if d.export else "")
        else:
            export = f"onnx, opset >= {max(since or 0, MIN_OPSET)}" + (" (rewritten per opset)" if d.export else "")
        low = LOWERINGS.get(name)
        rows.append({
            "op": name, "domain": d.domain or "ai.onnx", "infer": callable(d.infer), "compute": d.has_compute,
            "export": export, "since": since, "has_export_fact": d.export is not None,
            "lowering": ",".join(low.dtypes) if low else "", "view kind": VIEW_KINDS.get(name, ""),
        })
    return rows


def test_op_table_lists_every_op_with_its_facts():
    rows = op_table()
    print(f"\n{'op':<24}{'domain':<9}{'infer':<7}{'compute':<9}{'export':<38}{'lowering':<17}view kind")
    for r in rows:
        print(f"{r['op']:<24}{r['domain']:<9}{'yes' if r['infer'] else 'NO':<7}{'yes' if r['compute'] else 'NO':<9}"
              f"{r['export']:<38}{r['lowering'] or '-':<17}{r['view kind'] or 'NONE'}")
    missing = {
        "inference": [r["op"] for r in rows if not r["infer"]],
        "compute (after importing the layer that registers it)": [r["op"] for r in rows if not r["compute"]],
        "view kind (the widgets draw every op)": [r["op"] for r in rows if not r["view kind"]],
        "ONNX export (every standard op is an ONNX op)": [r["op"] for r in rows if r["domain"] == "ai.onnx"
                                                          and r["since"] is None],
        f"an export at opset {DEFAULT_OPSET} (the default): a decomposition where the op is newer": [
            r["op"] for r in rows if r["domain"] == "ai.onnx" and r["since"] and r["since"] > DEFAULT_OPSET
            and not r["has_export_fact"]],
        "a doc": [name for name, d in OPS.items() if not d.doc],
    }
    problems = {k: v for k, v in missing.items() if v}
    assert not problems, f"ops lacking a fact their layer promises: {problems}"


def test_every_op_codegen_claims_has_a_lowering():
    claimed = {op for op in ELEMENTWISE_OPS if "(" not in op} - {"Identity"}  # Identity is a view: no kernel
    assert claimed - set(LOWERINGS) == set(), f"codegen lists ops it cannot lower: {claimed - set(LOWERINGS)}"
    assert set(LOWERINGS) <= set(OPS)
    from infopt.codegen.graph_compile import VIEW_OPS

    assert set(VIEW_OPS) <= set(OPS)


def test_registering_twice_is_an_error_unless_replace():
    d = OPS["Relu"]
    with pytest.raises(RegistrationError, match="'Relu' already has a definition.*replace=True"):
        register_op(OpDef("Relu", d.infer, d.compute))
    assert register_op(d, replace=True) is d
    with pytest.raises(RegistrationError, match="already has a lowering"):
        lowering("Relu")(lambda g, n: None)
    with pytest.raises(RegistrationError, match="no such op"):
        lowering("NoSuchOp_test")(lambda g, n: None)
    with pytest.raises(RegistrationError, match="already has a view kind"):
        view_kind("activation", "Relu")
    with pytest.raises(RegistrationError, match="no such op"):
        view_kind("activation", "NoSuchOp_test")
    with pytest.raises(RegistrationError, match="already has a compute"):
        register_compute("AccelCall", lambda xs, a: [])
    with pytest.raises(RegistrationError, match="computes in infopt.ir.ops itself"):
        register_compute("Relu", lambda xs, a: [])
    with pytest.raises(RegistrationError, match="use .register"):
        OPS["Relu"] = d


_PROBE = """
import json, sys
for mod in sys.argv[1:]:
    __import__(mod)
from infopt.ir import OPS
print(json.dumps({"ops": sorted(OPS), "QuantizeLinear": "QuantizeLinear" in OPS,
                  "mods": sorted(m for m in sys.modules if m.startswith("infopt."))}))
"""


def _ops_after(*mods: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _PROBE, *mods], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_set_of_ops_does_not_depend_on_what_was_imported():
    alone = _ops_after("infopt.ir")
    assert alone["QuantizeLinear"] and "FusedConv" in alone["ops"] and "AccelCall" in alone["ops"]
    assert not any(m.startswith(("infopt.passes", "infopt.codegen", "infopt.accel", "infopt.widgets"))
                   for m in alone["mods"]), "infopt.ir imports a higher layer"
    for mods in (("infopt.passes",), ("infopt.codegen",), ("infopt.codegen.graph_compile", "infopt.accel.byoc"),
                 ("infopt.quant", "infopt.widgets")):
        assert _ops_after(*mods)["ops"] == alone["ops"], f"importing {mods} changes the set of ops"


def test_accel_call_without_the_accelerator_says_what_to_import():
    code = ("from infopt.ir import OPS\n"
            "try:\n    OPS['AccelCall'].compute([], {})\nexcept Exception as e:\n    print(type(e).__name__, e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "UnsupportedOpError" in out.stdout and "systolic-array simulator" in out.stdout
    assert "import infopt.accel.lowering" in out.stdout


# ----- the lowerings are right for every dtype they claim, and others fall back --------------------------------
_UNARY = {"Relu", "Neg", "Abs", "Sqrt", "Log", "Exp", "Sigmoid", "Tanh", "Gelu", "Cast"}


def _node_graph(op: str, dtype: str, rng) -> tuple[Graph, dict]:
    g = Graph(f"{op}_{dtype}")
    shape = (3, 5)
    feeds = {}

    def value(name: str, positive: bool = False):
        if dtype.startswith("f"):
            v = rng.standard_normal(shape) * 2
            v = np.abs(v) + 0.5 if positive else v
        else:
            v = rng.integers(1 if positive or dtype.startswith("u") else -6, 7, shape)
        feeds[name] = v.astype(TensorType((), dtype).numpy_dtype)
        return g.add_input(name, TensorType(shape, dtype))

    if op in _UNARY:
        x = value("x", positive=op in ("Sqrt", "Log"))
        attrs = {"to": 7 if dtype.startswith("f") else 1} if op == "Cast" else \
            {"approximate": "tanh"} if op == "Gelu" else {}
        node = g.add_node(op, [x], attrs)
    elif op == "Clip":
        x = value("x")
        lo = g.add_initializer("lo", np.array(2 if dtype.startswith("u") else -1, TensorType((), dtype).numpy_dtype))
        hi = g.add_initializer("hi", np.array(5, TensorType((), dtype).numpy_dtype))
        node = g.add_node(op, [x, lo, hi])
    elif op in ("Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"):
        a = value("a", positive=op == "Pow")
        b = value("b", positive=op in ("Div", "Pow"))
        node = g.add_node(op, [a, b])
    elif op in ("ReduceSum", "ReduceMax", "ReduceMean"):
        node = g.add_node(op, [value("x")], {"axes": [1]})
    elif op == "Softmax":
        node = g.add_node(op, [value("x")], {"axis": -1})
    elif op in ("MatMul", "Gemm"):
        a = value("a")
        w = g.add_initializer("w", rng.standard_normal((5, 4)).astype(TensorType((), dtype).numpy_dtype))
        node = g.add_node(op, [a, w])
    else:
        return g, {}
    g.outputs = list(node.outputs)
    return g, feeds


@pytest.mark.parametrize("op", sorted(set(LOWERINGS) - {"Conv", "FusedElementwise"}))
def test_each_lowering_is_right_for_the_dtypes_it_claims_and_falls_back_otherwise(op):
    """compile_graph(fallback='numpy') equals the interpreter for every dtype: lowered where the lowering claims
    the dtype, run with numpy elsewhere (integer Pow was once lowered as exp(y * log(x)))."""
    from infopt.codegen import compile_graph
    from infopt.ir.interpreter import run_graph

    rng = np.random.default_rng(7)
    from infopt.ir import GraphError

    checked = []
    for dtype in ("f32", "f64", "i32", "i64", "f16", "i8", "u8"):
        try:
            g, feeds = _node_graph(op, dtype, rng)
        except GraphError:  # the op does not take this dtype at all (Sqrt on ints): nothing to lower
            continue
        assert feeds, f"no probe graph for {op}"
        ref = run_graph(g, feeds)
        checked.append(dtype)
        cg = compile_graph(g, fallback="numpy")
        how = cg.plan[0][2]
        claimed = dtype in LOWERINGS[op].dtypes and all(g.type_of(v).dtype in LOWERINGS[op].dtypes
                                                         for v in [*g.inputs, *g.outputs])
        assert how == ("llvm" if claimed else "numpy"), f"{op} {dtype}: ran as {how}"
        got = cg(feeds)
        for k, v in ref.items():
            assert got[k].dtype == v.dtype, f"{op} {dtype}: {got[k].dtype} != {v.dtype}"
            np.testing.assert_allclose(got[k].astype(np.float64), v.astype(np.float64), rtol=2e-5, atol=1e-5,
                                       err_msg=f"{op} {dtype} ({how})")
        if not claimed:
            with pytest.raises(UnsupportedLoweringError, match=f"handles {', '.join(LOWERINGS[op].dtypes)} only"):
                compile_graph(g)
    assert set(LOWERINGS[op].dtypes) <= set(checked), f"{op}: dtypes claimed but not checked"


def test_integer_pow_is_not_lowered():
    from infopt.codegen import compile_graph
    from infopt.ir.interpreter import run_graph

    g = Graph("ipow")
    a = g.add_input("a", TensorType((4,), "i64"))
    b = g.add_input("b", TensorType((4,), "i64"))
    g.outputs = g.add_node("Pow", [a, b]).outputs
    feeds = {"a": np.array([2, 3, -2, 7], np.int64), "b": np.array([10, 3, 3, 0], np.int64)}
    cg = compile_graph(g, fallback="numpy")
    assert cg.plan[0][2] == "numpy"
    np.testing.assert_array_equal(cg(feeds)[g.outputs[0]], [1024, 27, -8, 1])
    np.testing.assert_array_equal(run_graph(g, feeds)[g.outputs[0]], [1024, 27, -8, 1])


def test_every_op_of_every_dtype_compiles_with_the_numpy_fallback():
    """A graph whose ops have no lowering or whose dtypes the kernel IR lacks (f16, bf16, u8...) still compiles."""
    from infopt.codegen import compile_graph
    from infopt.ir.interpreter import run_graph

    g = Graph("mixed")
    x = g.add_input("x", TensorType((2, 6), "f16"))
    h = g.add_node("HardSwish", [x]).outputs[0]
    c = g.add_node("Cast", [h], {"to": 16}).outputs[0]  # to bf16
    r = g.add_node("Relu", [c]).outputs[0]
    u = g.add_node("Cast", [r], {"to": 2}).outputs[0]  # to u8
    s = g.add_initializer("s", np.array([3, 3], np.int64))
    parts = g.add_node("Split", [u, s], {"axis": 1}, outputs=2).outputs
    g.outputs = [g.add_node("Add", parts).outputs[0]]
    feeds = {"x": np.random.default_rng(0).standard_normal((2, 6)).astype(np.float16) * 4}
    cg = compile_graph(g, fallback="numpy")
    assert {how for _, _, how in cg.plan} == {"numpy"}
    np.testing.assert_array_equal(cg(feeds)[g.outputs[0]], run_graph(g, feeds)[g.outputs[0]])
    assert INFOPT_DOMAIN == "infopt" and MIN_OPSET == 13
