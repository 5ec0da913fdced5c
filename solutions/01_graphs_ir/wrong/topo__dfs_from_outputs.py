def topo_order(graph: Graph) -> list[Node]:
    """Depth-first from the graph outputs: right for what the outputs need, but nodes they do not need are lost."""
    producer = {out: node for node in graph.nodes for out in node.outputs if out}
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

    for out in graph.outputs:
        if out in producer:
            visit(producer[out])
    return order
