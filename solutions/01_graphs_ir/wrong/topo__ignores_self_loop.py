def topo_order(graph: Graph) -> list[Node]:
    """Kahn's algorithm that skips a node's dependency on itself ('a node does not wait for itself')."""
    producer = {out: node for node in graph.nodes for out in node.outputs if out}
    waits = {id(n): set() for n in graph.nodes}
    readers = {id(n): [] for n in graph.nodes}
    for node in graph.nodes:
        for name in node.inputs:
            dep = producer.get(name)
            if dep is not None and dep is not node and id(dep) not in waits[id(node)]:
                waits[id(node)].add(id(dep))
                readers[id(dep)].append(node)
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
        raise ValueError(f"cycle through {[n.label for n in graph.nodes if waits[id(n)]]}")
    return order
