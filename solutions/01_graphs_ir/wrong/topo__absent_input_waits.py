def topo_order(graph: Graph) -> list[Node]:
    """A node is ready when all its inputs are available; the absent input "" never becomes available."""
    available = set(graph.inputs) | set(graph.initializers)
    remaining = list(graph.nodes)
    order: list[Node] = []
    while remaining:
        ready = [n for n in remaining if all(v in available for v in n.inputs)]
        if not ready:
            raise ValueError(f"cycle: these nodes never become ready: {[n.label for n in remaining]}")
        for n in ready:
            order.append(n)
            available.update(n.outputs)
        remaining = [n for n in remaining if all(n is not r for r in ready)]
    return order
