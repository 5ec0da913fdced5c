def topo_order(graph: Graph) -> list[Node]:
    """Depth-first post-order with a 'seen' set only: right on DAGs, but a cycle goes unnoticed."""
    producer = {out: node for node in graph.nodes for out in node.outputs if out}
    seen: set[int] = set()
    order: list[Node] = []

    def visit(node: Node) -> None:
        if id(node) in seen:
            return
        seen.add(id(node))
        for name in node.inputs:
            if name in producer:
                visit(producer[name])
        order.append(node)

    for node in graph.nodes:
        visit(node)
    return order
