from infopt.passes.rewrite import attrs_key


def eliminate_common_subexpressions(graph: Graph) -> Graph:
    """CSE by the library's own pass (not written by the student)."""
    return P.CommonSubexpressionElimination(dedupe_constants=False)(graph)
