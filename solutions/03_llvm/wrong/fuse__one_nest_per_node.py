def fuse_chain(graph: Graph) -> Kernel:
    """One loop nest per node, each writing its value to out0 for the next nest to read: not fused."""
    shape = graph.type_of(graph.outputs[0]).shape
    ins = [Buffer(f"in{k}", shape) for k in range(len(graph.inputs))]
    out = Buffer("out0", shape, role="out")
    idx = tuple(Var(f"i{d}") for d in range(len(shape)))
    sc = Scalars()
    vals = {name: buf[idx] for name, buf in zip(graph.inputs, ins)}
    nests = []
    for node in graph.nodes:
        pre, e = ew_expr(node.op, [vals[i] for i in node.inputs], node.attrs, "f32", sc)
        body = pre + [Store(out, idx, e)]
        for v, n in reversed(list(zip(idx, shape))):
            body = [Loop(v, 0, n, 1, tuple(body))]
        nests += body
        vals[node.outputs[0]] = out[idx]
    return Kernel("fused_chain", tuple(ins + [out]), tuple(nests))
