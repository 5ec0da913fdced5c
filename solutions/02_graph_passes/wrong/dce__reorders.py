def eliminate_dead_code(graph: Graph) -> Graph:
    """A copy of graph holding the live nodes in the order the backward walk found them, reversed."""
    g = graph.copy()
    producers = g.producers()
    live = set()
    found = []
    stack = [producers[o] for o in g.outputs if o in producers]
    while stack:
        node = stack.pop()
        if id(node) in live:
            continue
        live.add(id(node))
        found.append(node)
        stack.extend(producers[i] for i in node.inputs if i in producers)
    g.remove_nodes([n for n in g.nodes if id(n) not in live])
    g.nodes = found[::-1]
    g.prune_initializers()
    return g
