def free_after(graph: Graph) -> list[list[str]]:
    """Reads the frees off the library's liveness intervals (the end of each interval)."""
    from infopt.passes.memory import liveness

    result: list[list[str]] = [[] for _ in graph.nodes]
    for iv in liveness(graph, order=graph.nodes):
        if iv.name not in graph.outputs:
            result[iv.end].append(iv.name)
    return [sorted(r) for r in result]
