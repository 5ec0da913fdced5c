"""infopt.ir.testing: graph_fingerprint changes with every edit a caller would notice, and only then;
check_graph_pass names each promise of a pass that a function breaks."""
from __future__ import annotations

import numpy as np
import pytest

from infopt.ir import Graph, Node, TensorType
from infopt.ir.testing import graph_fingerprint, random_graph


def _graph():
    g = random_graph(3, n_nodes=6)
    g.add_initializer("extra", np.arange(4, dtype=np.float32))
    return g


def test_fingerprint_is_stable_across_reads_and_fresh_names():
    g = _graph()
    before = graph_fingerprint(g)
    g.producers(), g.consumers(), g.toposort(), g.fresh_name("t")
    assert graph_fingerprint(g) == before


@pytest.mark.parametrize("edit", [
    lambda g: g.nodes.reverse(),
    lambda g: g.nodes[0].inputs.append(""),
    lambda g: g.nodes[-1].outputs.__setitem__(0, "renamed"),
    lambda g: g.nodes[0].attrs.__setitem__("alpha", 1.0),
    lambda g: setattr(g.nodes[0], "name", "other"),
    lambda g: g.outputs.append(g.inputs[0]),
    lambda g: g.inputs.append("more"),
    lambda g: g.initializers.pop("extra"),
    lambda g: g.initializers["extra"].__setitem__(0, 9.0),
    lambda g: g.types.pop(g.inputs[0]),
    lambda g: g.nodes.__setitem__(0, Node(g.nodes[0].op, g.nodes[0].inputs, g.nodes[0].outputs,
                                          g.nodes[0].attrs, g.nodes[0].name)),   # an equal copy, not the node
], ids=["reorder", "node input", "node output", "attribute", "node name", "graph output", "graph input",
        "initializer dropped", "initializer contents", "type", "node replaced by an equal copy"])
def test_fingerprint_sees_every_edit(edit):
    g = _graph()
    before = graph_fingerprint(g)
    edit(g)
    assert graph_fingerprint(g) != before


def test_a_copy_has_another_fingerprint_and_leaves_the_original_alone():
    g = _graph()
    before = graph_fingerprint(g)
    h = g.copy()
    h.nodes.pop()
    assert graph_fingerprint(g) == before
    assert graph_fingerprint(h) != before


def test_fingerprint_rejects_a_non_graph():
    with pytest.raises(TypeError, match="needs a Graph"):
        graph_fingerprint([1, 2])


# ---- check_graph_pass: the check every graph-to-graph exercise shares --------------------------------------
from infopt.grading import GradingError  # noqa: E402
from infopt.ir.testing import check_graph_pass  # noqa: E402


def _identity_pass(g):
    return g.copy()


def test_check_graph_pass_returns_the_result_of_a_correct_pass():
    g = _graph()
    out = check_graph_pass(_identity_pass, g, name="my_pass", what="a random graph")
    assert out is not g and [n.op for n in out.nodes] == [n.op for n in g.nodes]


def _edits_input(g):
    g.nodes.pop()
    return g.copy()


def _adds_an_output(g):
    h = g.copy()
    h.outputs = [*h.outputs, h.inputs[0]]
    return h


def _drops_a_node(g):
    h = g.copy()
    h.nodes = h.nodes[1:]
    return h


@pytest.mark.parametrize("fn, words", [
    (lambda g: None, "must return a Graph, got NoneType"),
    (lambda g: g, "returned the graph it was given"),
    (_edits_input, "changed its input"),
    (lambda g: 1 / 0, "raised ZeroDivisionError on a valid input"),
    (_drops_a_node, "returned an invalid graph"),
    (_adds_an_output, "graph outputs changed"),
], ids=["none", "same object", "edits input", "raises", "invalid", "renamed output"])
def test_check_graph_pass_names_each_broken_promise(fn, words):
    with pytest.raises(GradingError, match=words):
        check_graph_pass(fn, _graph(), name="my_pass", what="a random graph")


def test_check_graph_pass_sees_changed_values_and_says_which_output():
    g = Graph("neg")
    x = g.add_input("x", TensorType((2, 3)))
    g.outputs = [g.add_node("Relu", [x], outputs=["y"]).outputs[0]]

    def negates(graph):
        h = graph.copy()
        h.nodes = [Node("Neg", ["x"], ["y"], {}, "n")]
        return h

    with pytest.raises(GradingError, match=r"the outputs changed: graph output %y .* relative error"):
        check_graph_pass(negates, g, name="my_pass", what="Relu graph", seed=3)


def test_check_graph_pass_runs_the_exercise_checks_before_the_generic_ones():
    seen = []

    def expect(out):
        seen.append(len(out))
        raise GradingError("the exercise's own message")

    with pytest.raises(GradingError, match="own message"):
        check_graph_pass(_drops_a_node, _graph(), name="my_pass", what="x", expect=expect)
    assert seen == [len(_graph()) - 1]


def test_check_graph_pass_rejects_a_non_graph_as_a_harness_mistake():
    with pytest.raises(TypeError, match="needs a Graph"):
        check_graph_pass(_identity_pass, [1], name="my_pass", what="x")
