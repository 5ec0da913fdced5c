def remove_redundant(graph: Graph) -> Graph:
    """Removes every pass-through node, even one that defines a graph output (the output gets renamed)."""
    g = graph.copy()
    changed = True
    while changed:
        changed = False
        producers = g.producers()
        for node in g.nodes:
            source, first = None, None
            if node.op == "Identity" or (node.op == "Dropout" and len(node.outputs) == 1):
                source = node.inputs[0]
            elif node.op == "Transpose":
                prev = producers.get(node.inputs[0])
                if prev is not None and prev.op == "Transpose":
                    p1, p2 = list(prev.attrs["perm"]), list(node.attrs["perm"])
                    if [p1[i] for i in p2] == list(range(len(p2))):
                        source, first = prev.inputs[0], prev
            if source is None:
                continue
            g.replace_uses(node.outputs[0], source)
            g.remove_nodes([node])
            if first is not None and not g.consumers().get(first.outputs[0]) and first.outputs[0] not in g.outputs:
                g.remove_nodes([first])  # nothing reads the first Transpose any more
            changed = True
            break
    return g
