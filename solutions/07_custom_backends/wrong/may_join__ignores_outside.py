def may_join(graph: Graph, group: set[str], node: Node) -> bool:
    """Refuses whenever an input depends on the group, even when that input comes straight from the group."""
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
            stack.extend(i for i in p.inputs if i)
        return False

    for value in node.inputs:
        p = producers.get(value) if value else None
        if p is not None and reaches_group(value):
            return False
    return True
