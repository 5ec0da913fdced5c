def topo_order(graph: Graph) -> list[Node]:
    """Depth-first with a visiting state that finds every cycle, but reports it as a RuntimeError."""
    producer = {out: node for node in graph.nodes for out in node.outputs if out}
    state: dict[int, int] = {}
    order: list[Node] = []

    def visit(node: Node) -> None:
        if state.get(id(node)) == 2:
            return
        if state.get(id(node)) == 1:
            raise RuntimeError(f"cycle through node {node.label}")
        state[id(node)] = 1
        for name in node.inputs:
            if name in producer:
                visit(producer[name])
        state[id(node)] = 2
        order.append(node)

    for node in graph.nodes:
        visit(node)
    return order
