def free_after(graph: Graph) -> list[list[str]]:
    """Walks the program backwards (the first reader seen is the last one), by reversing graph.nodes in place."""
    n = len(graph.nodes)
    graph.nodes.reverse()
    seen: set[str] = set(graph.outputs)
    result: list[list[str]] = [[] for _ in range(n)]
    for j, node in enumerate(graph.nodes):
        i = n - 1 - j
        for out in node.outputs:
            if out and out not in seen:        # nobody later reads it: free it right after its definition
                result[i].append(out)
                seen.add(out)
        for name in node.inputs:
            if name and name not in seen and name not in graph.inputs and name not in graph.initializers:
                result[i].append(name)
                seen.add(name)
    return [sorted(r) for r in result]
