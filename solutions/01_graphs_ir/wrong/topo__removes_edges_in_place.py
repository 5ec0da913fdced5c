def topo_order(graph: Graph) -> list[Node]:
    """The textbook 'remove each emitted edge from the graph': it deletes the inputs of the caller's nodes."""
    producer = {out: node for node in graph.nodes for out in node.outputs if out}
    order: list[Node] = []
    remaining = list(graph.nodes)
    while remaining:
        ready = [n for n in remaining if not any(v in producer for v in n.inputs)]
        if not ready:
            raise ValueError(f"cycle through {[n.label for n in remaining]}")
        for n in ready:
            order.append(n)
            for out in n.outputs:
                producer.pop(out, None)
                for user in remaining:
                    while out in user.inputs:
                        user.inputs.remove(out)   # the edge is done
        remaining = [n for n in remaining if all(n is not r for r in ready)]
    return order
