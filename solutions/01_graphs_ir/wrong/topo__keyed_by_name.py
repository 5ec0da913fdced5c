def topo_order(graph: Graph) -> list[Node]:
    """Kahn's algorithm keyed by node name: nodes with the same (or an empty) name collapse into one."""
    by_name = {n.name: n for n in graph.nodes}
    producer = {out: n.name for n in graph.nodes for out in n.outputs if out}
    waits = {n.name: {producer[v] for v in n.inputs if v in producer} for n in graph.nodes}
    order: list[Node] = []
    ready = [name for name, w in waits.items() if not w]
    while ready:
        name = ready.pop(0)
        order.append(by_name[name])
        for other, w in waits.items():
            if name in w:
                w.discard(name)
                if not w:
                    ready.append(other)
    if len(order) != len(by_name):
        raise ValueError(f"cycle through {[k for k, w in waits.items() if w]}")
    return order
