def free_after(graph: Graph) -> list[list[str]]:
    """Frees graph inputs and constants too, after their last reader."""
    last: dict[str, int] = {v: 0 for v in [*graph.inputs, *graph.initializers] if v}
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
        if name not in graph.outputs:
            result[i].append(name)
    return [sorted(r) for r in result]
