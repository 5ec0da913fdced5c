def ssa_problems(graph: Graph) -> set[tuple[str, str]]:
    """Collects all definitions first, so a use before its definition looks fine."""
    ndefs: dict[str, int] = {}
    for name in [*graph.inputs, *graph.initializers, *(o for n in graph.nodes for o in n.outputs)]:
        if name:
            ndefs[name] = ndefs.get(name, 0) + 1
    problems = {("redefined", v) for v, k in ndefs.items() if k > 1}
    for node in graph.nodes:
        for name in node.inputs:
            if name and name not in ndefs:
                problems.add(("undefined", name))
    problems |= {("undefined_output", v) for v in graph.outputs if v and v not in ndefs}
    return problems
