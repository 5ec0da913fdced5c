def fold_constants(graph: Graph) -> Graph:
    """A copy of graph with every all-constant node evaluated into initializers (graph outputs' nodes kept)."""
    g = graph.copy()
    dead = []
    for node in g.toposort():
        if node.outputs[0] in g.outputs:
            continue
        if all(i == "" or i in g.initializers for i in node.inputs):
            args = [g.initializers[i] if i else None for i in node.inputs]
            values = get_op(node.op).compute(args, node.attrs)
            for out, v in zip(node.outputs, values):
                if out:
                    g.add_initializer(out, np.asarray(v))
            dead.append(node)
    ids = {id(n) for n in dead}
    g.nodes = [n for n in g.nodes if id(n) not in ids]
    g.prune_initializers()
    return g
