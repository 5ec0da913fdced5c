def topo_order(graph: Graph) -> list[Node]:
    """Sorts a copy of the graph (to leave the original alone) and returns the copy's nodes."""
    g = graph.copy()
    producer = {out: node for node in g.nodes for out in node.outputs if out}
    state: dict[int, int] = {}
    order: list[Node] = []

    def visit(node: Node) -> None:
        if state.get(id(node)) == 2:
            return
        if state.get(id(node)) == 1:
            raise ValueError(f"cycle through node {node.label}")
        state[id(node)] = 1
        for name in node.inputs:
            if name in producer:
                visit(producer[name])
        state[id(node)] = 2
        order.append(node)

    for node in g.nodes:
        visit(node)
    return order
