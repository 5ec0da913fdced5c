def remove_redundant(graph: Graph) -> Graph:
    """Decides what to remove once, on the original graph, then removes it: an Identity between two Transposes hides the pair."""
    g = graph.copy()
    keep = set(g.outputs)

    def passthrough(node: Node, producers: dict) -> tuple[str, Node | None] | None:
        if node.op == "Identity" or (node.op == "Dropout" and len(node.outputs) == 1):
            return node.inputs[0], None
        if node.op == "Transpose":
            first = producers.get(node.inputs[0])
            if first is not None and first.op == "Transpose":
                p1, p2 = list(first.attrs["perm"]), list(node.attrs["perm"])
                if [p1[i] for i in p2] == list(range(len(p2))):
                    return first.inputs[0], first
        return None

    producers = g.producers()
    plan = [(node, passthrough(node, producers)) for node in g.nodes if not any(o in keep for o in node.outputs)]
    for node, found in plan:
        if found is None:
            continue
        first = found[1]
        source = first.inputs[0] if first is not None else node.inputs[0]
        g.replace_uses(node.outputs[0], source)
        g.remove_nodes([node])
        if first is not None and first.outputs[0] not in keep and not g.consumers().get(first.outputs[0]):
            g.remove_nodes([first])
    return g
