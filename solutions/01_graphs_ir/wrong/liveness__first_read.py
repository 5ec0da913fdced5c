def free_after(graph: Graph) -> list[list[str]]:
    """Frees a value after its FIRST reader."""
    last: dict[str, int] = {}
    for i, node in enumerate(graph.nodes):
        for out in node.outputs:
            if out:
                last[out] = i
    for i, node in enumerate(graph.nodes):
        for name in node.inputs:
            if name in last:
                if last[name] < i and not any(name in m.inputs for m in graph.nodes[:i]):
                    last[name] = i
    result: list[list[str]] = [[] for _ in graph.nodes]
    for name, i in last.items():
        if name not in graph.outputs:
            result[i].append(name)
    return [sorted(r) for r in result]
