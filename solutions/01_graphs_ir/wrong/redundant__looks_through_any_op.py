def remove_redundant(graph: Graph) -> Graph:
    """Cancels a Transpose pair with any one-input op between them (a Relu), as if the op were an Identity."""
    g = graph.copy()
    keep = set(g.outputs)

    def passthrough(node: Node, producers: dict) -> tuple[str, Node | None] | None:
        """(value that node's output equals, a Transpose that may become dead) or None."""
        if node.op == "Identity" or (node.op == "Dropout" and len(node.outputs) == 1):
            return node.inputs[0], None
        if node.op == "Transpose":
            first = producers.get(node.inputs[0])
            if first is not None and first.op != "Transpose" and len(first.inputs) == 1:
                first = producers.get(first.inputs[0])  # looks through the op between, whatever it is
            if first is not None and first.op == "Transpose":
                p1, p2 = list(first.attrs["perm"]), list(node.attrs["perm"])
                if [p1[i] for i in p2] == list(range(len(p2))):
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
                g.remove_nodes([first])  # nothing reads the first Transpose any more
            changed = True
            break
    return g
