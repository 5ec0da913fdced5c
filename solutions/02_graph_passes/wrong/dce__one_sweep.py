def eliminate_dead_code(graph: Graph) -> Graph:
    """A copy of graph without nodes whose outputs are neither read nor graph outputs (one sweep)."""
    g = graph.copy()
    readers = g.consumers()
    g.remove_nodes([n for n in g.nodes if not any(readers.get(o) or o in g.outputs for o in n.outputs)])
    g.prune_initializers()
    return g
