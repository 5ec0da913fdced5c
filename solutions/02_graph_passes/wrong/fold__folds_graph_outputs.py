def fold_constants(graph: Graph) -> Graph:
    """A copy of graph with every all-constant node evaluated into initializers."""
    g = graph.copy()
    kept = []
    for node in g.toposort():
        if not all(i == "" or i in g.initializers for i in node.inputs):
            kept.append(node)
            continue
        args = [g.initializers[i] if i else None for i in node.inputs]
        for name, value in zip(node.outputs, get_op(node.op).compute(args, node.attrs)):
            g.initializers[name] = np.asarray(value)
    g.nodes = kept
    g.prune_initializers()
    return g
