def fold_constants(graph: Graph) -> Graph:
    """A copy of graph with all-constant nodes folded, in one sweep over the stored node list."""
    g = graph.copy()
    kept = []
    for node in g.nodes:
        foldable = all(i == "" or i in g.initializers for i in node.inputs)
        if not foldable or any(o in g.outputs for o in node.outputs):
            kept.append(node)
            continue
        args = [g.initializers[i] if i else None for i in node.inputs]
        for name, value in zip(node.outputs, get_op(node.op).compute(args, node.attrs)):
            g.initializers[name] = np.asarray(value)
    g.nodes = kept
    g.prune_initializers()
    return g
