def eliminate_dead_code(graph: Graph) -> Graph:
    """A copy of graph without dead nodes (a node is found by its first output only)."""
    g = graph.copy()
    producers = {n.outputs[0]: n for n in g.nodes if n.outputs}
    live = set()
    stack = [producers[o] for o in g.outputs if o in producers]
    while stack:
        node = stack.pop()
        if id(node) in live:
            continue
        live.add(id(node))
        stack.extend(producers[i] for i in node.inputs if i in producers)
    g.remove_nodes([n for n in g.nodes if id(n) not in live])
    g.prune_initializers()
    return g
