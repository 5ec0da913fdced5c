def ssa_problems(graph: Graph) -> set[tuple[str, str]]:
    """Forgets that "" marks an absent value: it is counted, read and returned like a name."""
    ndefs: dict[str, int] = {}
    for name in [*graph.inputs, *graph.initializers, *(o for n in graph.nodes for o in n.outputs)]:
        if True:
            ndefs[name] = ndefs.get(name, 0) + 1
    problems = {("redefined", v) for v, k in ndefs.items() if k > 1}
    defined = {v for v in [*graph.inputs, *graph.initializers]}
    for node in graph.nodes:
        for name in node.inputs:
            if name not in ndefs:
                problems.add(("undefined", name))
            elif name not in defined:
                problems.add(("use_before_def", name))
        defined.update(node.outputs)
    problems |= {("undefined_output", v) for v in graph.outputs if v not in ndefs}
    return problems
