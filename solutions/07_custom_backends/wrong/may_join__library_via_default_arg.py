from infopt.accel.byoc import depends_on


def may_join(graph: Graph, group: set[str], node: Node, _depends=depends_on) -> bool:
    """May `node` join `group` (node names)? Not if an input reaches the group through a node outside it."""
    producers = graph.producers()
    for v in node.inputs:
        p = producers.get(v) if v else None
        if p is not None and p.name not in group and _depends(graph, v, group):
            return False
    return True
