def fold_constants(graph: Graph) -> Graph:
    """A copy of graph with all-constant nodes folded (only the first output stored)."""
    g = graph.copy()
    kept = []
    for node in g.toposort():
        foldable = all(i == "" or i in g.initializers for i in node.inputs)
        if not foldable or any(o in g.outputs for o in node.outputs):
            kept.append(node)
            continue
        args = [g.initializers[i] if i else None for i in node.inputs]
        g.initializers[node.outputs[0]] = np.asarray(get_op(node.op).compute(args, node.attrs)[0])
    g.nodes = kept
    g.prune_initializers()
    return g
