def ssa_problems(graph: Graph) -> set[tuple[str, str]]:
    """Counts a second definition only among node outputs (a node redefining a graph input or a constant goes unseen)."""
    ndefs: dict[str, int] = {}
    outs: dict[str, int] = {}
    for name in [*graph.inputs, *graph.initializers, *(o for n in graph.nodes for o in n.outputs)]:
        if name:
            ndefs[name] = ndefs.get(name, 0) + 1
    for name in (o for n in graph.nodes for o in n.outputs):
        if name:
            outs[name] = outs.get(name, 0) + 1
    problems = {("redefined", v) for v, k in outs.items() if k > 1}
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
    problems |= {("undefined_output", v) for v in graph.outputs if v and v not in ndefs}
    return problems
