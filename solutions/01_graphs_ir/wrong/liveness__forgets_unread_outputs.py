def free_after(graph: Graph) -> list[list[str]]:
    """Frees each value after its last reader, but a value nobody reads is never freed."""
    defined = {o for node in graph.nodes for o in node.outputs if o}
    last: dict[str, int] = {}
    for i, node in enumerate(graph.nodes):
        for name in node.inputs:
            if name in defined:
                last[name] = i
    result: list[list[str]] = [[] for _ in graph.nodes]
    for name, i in last.items():
        if name not in graph.outputs:
            result[i].append(name)
    return [sorted(r) for r in result]
