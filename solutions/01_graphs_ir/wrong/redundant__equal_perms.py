def remove_redundant(graph: Graph) -> Graph:
    """Thinks two Transposes cancel when their perms are equal (true only for self-inverse perms)."""
    g = graph.copy()
    keep = set(g.outputs)
    changed = True
    while changed:
        changed = False
        producers = g.producers()
        for node in g.nodes:
            if any(o in keep for o in node.outputs):
                continue
            source, first = None, None
            if node.op == "Identity" or (node.op == "Dropout" and len(node.outputs) == 1):
                source = node.inputs[0]
            elif node.op == "Transpose":
                prev = producers.get(node.inputs[0])
                if prev is not None and prev.op == "Transpose" and list(prev.attrs["perm"]) == list(node.attrs["perm"]):
                    source, first = prev.inputs[0], prev
            if source is None:
                continue
            g.replace_uses(node.outputs[0], source)
            g.remove_nodes([node])
            if first is not None and first.outputs[0] not in keep and not g.consumers().get(first.outputs[0]):
                g.remove_nodes([first])  # nothing reads the first Transpose any more
            changed = True
            break
    return g
