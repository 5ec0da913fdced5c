def fuse_chain(graph: Graph) -> Kernel:
    """Treats the graph as a pure chain: a node's first input is taken to be the previous node's value."""
    shape = graph.type_of(graph.outputs[0]).shape
    ins = [Buffer(f"in{k}", shape) for k in range(len(graph.inputs))]
    out = Buffer("out0", shape, role="out")
    idx = tuple(Var(f"i{d}") for d in range(len(shape)))
    sc = Scalars()
    vals = {name: buf[idx] for name, buf in zip(graph.inputs, ins)}
    stmts = []
    prev = None
    for node in graph.nodes:
        args = [vals[i] for i in node.inputs]
        if prev is not None:
            args[0] = prev
        pre, e = ew_expr(node.op, args, node.attrs, "f32", sc)
        v = sc.new("f32", "v")
        stmts += pre + [Assign(v, e)]
        vals[node.outputs[0]] = v
        prev = v
    body = stmts + [Store(out, idx, vals[graph.outputs[0]])]
    for v, n in reversed(list(zip(idx, shape))):
        body = [Loop(v, 0, n, 1, tuple(body))]
    return Kernel("fused_chain", tuple(ins + [out]), tuple(body))
