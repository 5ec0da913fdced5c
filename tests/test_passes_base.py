"""Tests for infopt.passes.base: Pass, PassResult, PassManager (order, fixpoint, verification, statistics)."""
import numpy as np
import pytest

from infopt.ir import Graph, GraphError, TensorType
from infopt.passes import FunctionPass, Pass, PassError, PassManager, PassSkipped, graph_signature


def _chain(n: int = 3) -> Graph:
    g = Graph("chain")
    x = g.add_input("x", TensorType((2, 3)))
    for _ in range(n):
        x = g.add_node("Relu", [x]).outputs[0]
    g.outputs = [x]
    return g


def _drop_last_relu(graph: Graph) -> dict:
    """Remove the Relu that defines the output (Relu(Relu(x)) == Relu(x)), if there are two in a row."""
    prod = graph.producers()
    last = prod[graph.outputs[0]]
    prev = prod.get(last.inputs[0])
    if prev is None or prev.op != "Relu":
        return {"reason": "single relu"}
    graph.remove_nodes([last])
    graph.outputs = [prev.outputs[0]]
    return {"removed": 1}


def test_run_never_mutates_input_and_reports_change():
    g = _chain(3)
    sig = graph_signature(g)
    res = FunctionPass("drop", _drop_last_relu).run(g)
    assert graph_signature(g) == sig
    assert res.changed and len(res.graph) == 2 and res.stats == {"removed": 1}


def test_unchanged_pass_returns_input_with_reason():
    g = _chain(1)
    res = FunctionPass("drop", _drop_last_relu).run(g)
    assert not res.changed and res.graph is g and res.reason == "single relu"


def test_skipped_pass_says_why():
    class Picky(Pass):
        name = "picky"

        def apply(self, graph):
            graph.nodes.clear()  # must not leak: the skip restores the input
            raise PassSkipped("graph has Relu nodes, which this pass cannot handle")

    g = _chain(2)
    res = Picky().run(g)
    assert not res.changed and "cannot handle" in res.reason and len(g) == 2


def test_fixpoint_runs_until_nothing_changes_and_records_stats():
    g = _chain(4)
    once = PassManager([FunctionPass("drop", _drop_last_relu)]).run(g)
    assert len(once.graph) == 3 and len(once.records) == 1
    fix = PassManager([FunctionPass("drop", _drop_last_relu)], fixpoint=True, max_iterations=10).run(g, snapshots=True)
    assert len(fix.graph) == 1
    assert [r.nodes_after for r in fix.records] == [3, 2, 1, 1]
    assert fix.records[-1].changed is False and len(fix.snapshots) == 5
    rows = fix.table()
    assert rows[0]["pass"] == "drop" and rows[0]["nodes_before"] == 4 and "removed=1" in rows[0]["stats"]
    assert "nodes_before" in fix.format_table()


def _break(graph: Graph) -> dict:
    graph.nodes[0].inputs = ["nowhere"]
    return {"broke": 1}


def test_verifier_catches_a_broken_pass():
    with pytest.raises(PassError, match="breaker"):
        PassManager([FunctionPass("breaker", _break)]).run(_chain(2))
    res = PassManager([FunctionPass("breaker", _break)], on_invalid="revert").run(_chain(2))
    assert len(res.graph) == 2 and res.graph.nodes[0].inputs == ["x"]
    assert not res.records[0].changed and "reverted" in res.records[0].reason


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="FunctionPass"):
        PassManager([_drop_last_relu])
    with pytest.raises(TypeError, match="Graph"):
        FunctionPass("drop", _drop_last_relu).run("not a graph")
    with pytest.raises(ValueError, match="on_invalid"):
        PassManager([], on_invalid="ignore")
