def free_after(graph: Graph) -> list[list[str]]:
    """Forgets that graph outputs must stay alive."""
    last: dict[str, int] = {}
    for i, node in enumerate(graph.nodes):
        for out in node.outputs:
            if out:
                last[out] = i
    for i, node in enumerate(graph.nodes):
        for name in node.inputs:
            if name in last:
                last[name] = max(last[name], i)
    result: list[list[str]] = [[] for _ in graph.nodes]
    for name, i in last.items():
        result[i].append(name)
    return [sorted(r) for r in result]
