def eliminate_dead_code(graph: Graph) -> Graph:
    """A copy of graph without dead nodes and without constants no node reads."""
    g = graph.copy()
    producers = g.producers()
    live = set()
    stack = [producers[o] for o in g.outputs if o in producers]
    while stack:
        node = stack.pop()
        if id(node) in live:
            continue
        live.add(id(node))
        stack.extend(producers[i] for i in node.inputs if i in producers)
    g.remove_nodes([n for n in g.nodes if id(n) not in live])
    read = {i for n in g.nodes for i in n.inputs}
    g.initializers = {k: v for k, v in g.initializers.items() if k in read}
    return g
