def may_join(graph: Graph, group: set[str], node: Node) -> bool:
    """Builds its own producer map from each node's first output, so values from a second output have no producer."""
    producers = {n.outputs[0]: n for n in graph.nodes}

    def reaches_group(value: str) -> bool:
        stack, seen = [value], set()
        while stack:
            p = producers.get(stack.pop())
            if p is None or p.name in seen:
                continue
            if p.name in group:
                return True
            seen.add(p.name)
            stack.extend(i for i in p.inputs if i)
        return False

    for value in node.inputs:
        p = producers.get(value) if value else None
        if p is not None and p.name not in group and reaches_group(value):
            return False
    return True
