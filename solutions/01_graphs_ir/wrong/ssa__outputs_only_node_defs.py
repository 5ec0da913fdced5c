def ssa_problems(graph: Graph) -> set[tuple[str, str]]:
    """Checks graph outputs against node outputs only: an output that is a graph input or a constant is reported undefined."""
    ndefs: dict[str, int] = {}
    for name in [*graph.inputs, *graph.initializers, *(o for n in graph.nodes for o in n.outputs)]:
        if name:
            ndefs[name] = ndefs.get(name, 0) + 1
    problems = {("redefined", v) for v, k in ndefs.items() if k > 1}
    defined = {v for v in [*graph.inputs, *graph.initializers] if v}
    for node in graph.nodes:
        for name in node.inputs:
            if not name:
                continue
            if name not in ndefs:
                problems.add(("undefined", name))
            elif name not in defined:
                problems.add(("use_before_def", name))
        defined.update(o for o in node.outputs if o)
    problems |= {("undefined_output", v) for v in graph.outputs if v and v not in {o for n in graph.nodes for o in n.outputs}}
    return problems
