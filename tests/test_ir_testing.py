"""infopt.ir.testing.graph_fingerprint: it changes with every edit a caller would notice, and only then."""
from __future__ import annotations

import numpy as np
import pytest

from infopt.ir import Node
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
