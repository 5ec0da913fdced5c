from infopt.passes.rewrite import attrs_key


def eliminate_common_subexpressions(graph: Graph) -> Graph:
    """A copy of graph with repeated computations merged, visiting the stored node list."""
    g = graph.copy()
    seen = {}
    dead = []
    for node in g.nodes:
        inputs = sorted(node.inputs) if get_op(node.op).commutative else list(node.inputs)
        key = (node.op, tuple(inputs), attrs_key(node.attrs), len(node.outputs))
        first = seen.get(key)
        if first is None:
            seen[key] = node
            continue
        if any(o in g.outputs for o in node.outputs):
            continue
        for mine, theirs in zip(node.outputs, first.outputs):
            g.replace_uses(mine, theirs)
        dead.append(node)
    g.remove_nodes(dead)
    return g
