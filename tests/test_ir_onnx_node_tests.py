"""ONNX's own node tests (generated in memory from onnx's case definitions) through import, the interpreter,
the default pass pipeline and export, for every op the registry claims (infopt.passes.conformance)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from infopt.ir import OPS, register_op
from infopt.passes.conformance import (
    DECLINE_REASONS, NodeTestReport, case_io, claimed_ops, collect_cases, graph_of_case, run_case, run_node_tests,
)


@pytest.fixture(scope="module")
def report() -> NodeTestReport:
    return run_node_tests()


def test_every_claimed_op_passes_its_onnx_node_tests(report):
    print("\nONNX node tests (import, interpreter, default pipeline, export, round trip):")
    print(report.table())
    print(f"pass rate over the cases the IR honours: {report.pass_rate:.1%}")
    failed = [f"{r.name} ({r.op}): {r.detail[:300]}" for r in report.failed]
    assert not failed, f"{len(failed)} node test cases failed:\n" + "\n".join(failed)
    rows = report.by_op()
    without = [op for op in claimed_ops() if rows.get(op, {}).get("passed", 0) == 0]
    assert not without, f"claimed ops with no passing ONNX node test: {without}"
    assert sum(r["cases"] for r in rows.values()) > 500


def test_declined_cases_say_why_in_a_clear_error(report):
    declined = [r for r in report.results if r.status == "declined"]
    assert declined
    for r in declined:
        kind = r.detail.split(":", 1)[0]
        assert kind in DECLINE_REASONS and re.search(DECLINE_REASONS[kind], r.detail), r.detail
        assert "at import" in r.detail, f"{r.name}: declined later than import: {r.detail}"
    kinds = {r.detail.split(":", 1)[0] for r in declined}
    assert {"training mode", "dtype outside the IR"} <= kinds
    # every dtype the brief names is honoured, never declined
    for r in declined:
        assert not re.search(r"element type (INT16|UINT16|UINT32|UINT64|FLOAT16|BFLOAT16) ", r.detail), r.detail


def test_training_mode_dropout_says_it_runs_inference_only():
    cases = {c.name: (c, op, e) for c, op, e in collect_cases(["Dropout"])}
    r = run_case(*cases["test_training_dropout"])
    assert r.status == "declined"
    assert "Dropout: training_mode=True is not supported: the infopt IR runs inference only" in r.detail
    assert "Dropout_0" in r.detail  # the node is named
    assert run_case(*cases["test_dropout_default"]).status == "passed"


def test_an_op_that_computes_wrongly_fails_its_cases():
    """The run checks values: a Neg that forgets to negate fails every Neg case (at the interpreter stage)."""
    right = OPS["Neg"]
    register_op(type(right)(**{**right.__dict__, "compute": lambda xs, a: [xs[0].copy()]}), replace=True)
    try:
        results = [run_case(c, op, e) for c, op, e in collect_cases(["Neg"])]
    finally:
        register_op(right, replace=True)
    assert results and all(r.status == "failed" and "interpreter" in r.detail for r in results)


def test_float16_computes_in_float16_with_onnx_tolerances():
    """f16 cases keep f16 end to end: the interpreter's outputs are f16 arrays within rtol 1e-3 of ONNX's."""
    from infopt.ir.interpreter import run_graph

    ok = {1, 10, 11, 6, 7}  # f32, f16, f64, i32, i64
    f16 = [(c, op, e) for c, op, e in collect_cases(["Cast", "LayerNormalization", "Relu", "Clip"])
           if any(vi.type.tensor_type.elem_type == 10 for vi in c.model.graph.output)
           and all(vi.type.tensor_type.elem_type in ok for vi in [*c.model.graph.input, *c.model.graph.output])]
    assert f16
    for c, op, e in f16:
        g = graph_of_case(c)
        assert all(g.type_of(o).dtype == "f16" for o in g.outputs)
        feeds, expected = case_io(c)
        got = run_graph(g, {k: v for k, v in feeds.items() if k in g.inputs})
        for name, ref in expected.items():
            assert got[name].dtype == np.float16
            np.testing.assert_allclose(got[name].astype(np.float32), ref.astype(np.float32), rtol=c.rtol, atol=c.atol)
