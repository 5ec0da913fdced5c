def may_join(graph: Graph, group: set[str], node: Node) -> bool:
    """Walks back through the first input of each producer only, so a path through a second input is missed."""
    producers = graph.producers()

    def reaches_group(value: str) -> bool:
        stack, seen = [value], set()
        while stack:
            p = producers.get(stack.pop())
            if p is None or p.name in seen:
                continue
            if p.name in group:
                return True
            seen.add(p.name)
            stack.extend(p.inputs[:1])
        return False

    for value in node.inputs:
        p = producers.get(value) if value else None
        if p is not None and p.name not in group and reaches_group(value):
            return False
    return True
