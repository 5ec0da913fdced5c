def topo_order(graph: Graph) -> list[Node]:
    """Delegates to the library's own ordering (which raises GraphError, a ValueError, on a cycle)."""
    return graph.toposort()
