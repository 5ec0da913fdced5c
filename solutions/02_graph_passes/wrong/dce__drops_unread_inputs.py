def eliminate_dead_code(graph: Graph) -> Graph:
    """A copy of graph without dead nodes, unread constants and unread graph inputs."""
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
    g.prune_initializers()
    read = {i for n in g.nodes for i in n.inputs} | set(g.outputs)
    g.inputs = [i for i in g.inputs if i in read]
    return g
