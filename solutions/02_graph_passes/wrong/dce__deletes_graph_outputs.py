def eliminate_dead_code(graph: Graph) -> Graph:
    """A copy of graph without nodes whose outputs nobody reads."""
    g = graph.copy()
    readers = g.consumers()
    g.remove_nodes([n for n in g.nodes if not any(readers.get(o) for o in n.outputs)])
    g.prune_initializers()
    return g
