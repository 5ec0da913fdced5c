def remove_redundant(graph: Graph) -> Graph:
    """Compares perm p2 with the inverse of p1 built as a list, so a perm given as a tuple never matches."""
    g = graph.copy()
    keep = set(g.outputs)

    def passthrough(node: Node, producers: dict) -> tuple[str, Node | None] | None:
        if node.op == "Identity" or (node.op == "Dropout" and len(node.outputs) == 1):
            return node.inputs[0], None
        if node.op == "Transpose":
            first = producers.get(node.inputs[0])
            if first is not None and first.op == "Transpose":
                p1, p2 = first.attrs["perm"], node.attrs["perm"]
                if p2 == [list(p1).index(i) for i in range(len(p1))]:
                    return first.inputs[0], first
        return None

    changed = True
    while changed:
        changed = False
        producers = g.producers()
        for node in g.nodes:
            if any(o in keep for o in node.outputs):
                continue
            found = passthrough(node, producers)
            if found is None:
                continue
            source, first = found
            g.replace_uses(node.outputs[0], source)
            g.remove_nodes([node])
            if first is not None and first.outputs[0] not in keep and not g.consumers().get(first.outputs[0]):
                g.remove_nodes([first])
            changed = True
            break
    return g
