def may_join(graph: Graph, group: set[str], node: Node) -> bool:
    """Looks one step back only: refuses if an outside producer reads the group *directly*, misses longer paths."""
    producers = graph.producers()
    for value in node.inputs:
        p = producers.get(value) if value else None
        if p is None or p.name in group:
            continue
        for v in p.inputs:
            q = producers.get(v) if v else None
            if q is not None and q.name in group:
                return False
    return True
