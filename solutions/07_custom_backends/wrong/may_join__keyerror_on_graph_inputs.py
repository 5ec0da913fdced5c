def may_join(graph: Graph, group: set[str], node: Node) -> bool:
    """Looks up every value it walks through with producers[...], which fails on graph inputs and constants."""
    producers = graph.producers()

    def reaches_group(value: str) -> bool:
        stack, seen = [value], set()
        while stack:
            p = producers[stack.pop()]
            if p.name in seen:
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
