def topo_order(graph: Graph) -> list[Node]:
    """Kahn's algorithm; on a cycle it names the first node that never became ready (maybe only downstream of the cycle)."""
    producer = {out: node for node in graph.nodes for out in node.outputs if out}
    waits = {id(n): {id(producer[v]) for v in n.inputs if v in producer} for n in graph.nodes}
    readers = {id(n): [] for n in graph.nodes}
    for n in graph.nodes:
        for w in waits[id(n)]:
            readers[w].append(n)
    ready = [n for n in graph.nodes if not waits[id(n)]]
    order: list[Node] = []
    while ready:
        node = ready.pop(0)
        order.append(node)
        for user in readers[id(node)]:
            waits[id(user)].discard(id(node))
            if not waits[id(user)]:
                ready.append(user)
    if len(order) != len(graph.nodes):
        stuck = [n for n in graph.nodes if waits[id(n)]]
        raise ValueError(f"the graph has a cycle: node {stuck[0].label} never becomes ready")
    return order
