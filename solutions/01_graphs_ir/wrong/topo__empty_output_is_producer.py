def topo_order(graph: Graph) -> list[Node]:
    """The nodes of `graph` in an order where producers come before readers; ValueError on a cycle."""
    producer = graph.producers()  # value name -> defining node
    waits = {}
    readers = {}
    for n in graph.nodes:
        deps = {id(producer[v]): producer[v] for v in n.inputs if v in producer}
        waits[id(n)] = len(deps)
        for d in deps.values():
            readers.setdefault(id(d), []).append(n)
    ready = [n for n in graph.nodes if waits[id(n)] == 0]
    order = []
    while ready:
        n = ready.pop(0)
        order.append(n)
        for r in readers.get(id(n), []):
            waits[id(r)] -= 1
            if waits[id(r)] == 0:
                ready.append(r)
    if len(order) < len(graph.nodes):
        done = {id(n) for n in order}
        n = next(n for n in graph.nodes if id(n) not in done)
        seen = []
        while id(n) not in [id(s) for s in seen]:
            seen.append(n)
            n = next(producer[v] for v in n.inputs if v in producer and id(producer[v]) not in done)
        raise ValueError(f"graph has a cycle through node {n.label}")
    return order
