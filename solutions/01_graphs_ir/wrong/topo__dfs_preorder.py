def topo_order(graph: Graph) -> list[Node]:
    """Depth-first with a proper cycle check, but each node is emitted before its producers (pre-order)."""
    producer = {out: node for node in graph.nodes for out in node.outputs if out}
    state: dict[int, int] = {}
    order: list[Node] = []

    def visit(node: Node) -> None:
        if state.get(id(node)) == 2:
            return
        if state.get(id(node)) == 1:
            raise ValueError(f"cycle through node {node.label}")
        state[id(node)] = 1
        order.append(node)
        for name in node.inputs:
            if name in producer:
                visit(producer[name])
        state[id(node)] = 2

    for node in graph.nodes:
        visit(node)
    return order
