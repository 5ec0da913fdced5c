from infopt.passes.rewrite import attrs_key


def eliminate_common_subexpressions(graph: Graph) -> Graph:
    """A copy of graph where every repeated (op, inputs, attrs) computation is done once."""
    g = graph.copy()
    seen, dead = {}, []
    for n in g.toposort():
        ins = sorted(n.inputs) if n.op in ("Add", "Mul") else list(n.inputs)
        key = (n.op, tuple(ins), attrs_key(n.attrs), len(n.outputs))
        first = seen.setdefault(key, n)
        if first is n or any(o in g.outputs for o in n.outputs):
            continue
        for mine, theirs in zip(n.outputs, first.outputs):
            g.replace_uses(mine, theirs)
        dead.append(n)
    g.remove_nodes(dead)
    return g
