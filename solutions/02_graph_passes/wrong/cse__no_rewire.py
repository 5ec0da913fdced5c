from infopt.passes.rewrite import attrs_key


def eliminate_common_subexpressions(graph: Graph) -> Graph:
    """A copy of graph with repeated computations removed (readers not pointed anywhere)."""
    g = graph.copy()
    seen = {}
    dead = []
    for node in g.toposort():
        inputs = sorted(node.inputs) if get_op(node.op).commutative else list(node.inputs)
        key = (node.op, tuple(inputs), attrs_key(node.attrs), len(node.outputs))
        first = seen.get(key)
        if first is None:
            seen[key] = node
            continue
        if any(o in g.outputs for o in node.outputs):
            continue
        dead.append(node)
    g.remove_nodes(dead)
    return g
