def topo_order(graph: Graph) -> list[Node]:
    """Kahn's algorithm counting every input edge, but each reader is told once: Add(v, v) waits forever."""
    producers = graph.producers()
    consumers = graph.consumers()          # each reader listed once per value
    indeg = {id(n): sum(1 for v in n.inputs if v in producers) for n in graph.nodes}
    ready = [n for n in graph.nodes if indeg[id(n)] == 0]
    order: list[Node] = []
    while ready:
        node = ready.pop(0)
        order.append(node)
        for out in node.outputs:
            for user in consumers.get(out, []):
                indeg[id(user)] -= 1
                if indeg[id(user)] == 0:
                    ready.append(user)
    if len(order) != len(graph.nodes):
        raise ValueError(f"cycle through {[n.label for n in graph.nodes if indeg[id(n)] > 0]}")
    return order
