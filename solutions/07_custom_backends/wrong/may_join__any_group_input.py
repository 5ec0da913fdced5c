def may_join(graph: Graph, group: set[str], node: Node) -> bool:
    """Joins whenever one input comes from the group, ignoring paths through the CPU (creates cycles)."""
    producers = graph.producers()
    return any(producers.get(v) is not None and producers[v].name in group for v in node.inputs if v)
