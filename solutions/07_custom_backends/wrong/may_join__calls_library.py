def may_join(graph: Graph, group: set[str], node: Node) -> bool:
    """Hands the question to the library's partitioner."""
    from infopt.accel.byoc import may_join as library_rule
    return library_rule(graph, group, node)
