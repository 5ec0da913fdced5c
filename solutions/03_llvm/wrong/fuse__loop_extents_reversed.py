def fuse_chain(graph: Graph) -> Kernel:
    """One loop nest with scalar intermediates, but each loop variable gets another dimension's extent (out of bounds
    whenever the shape is not the same size in every dimension)."""
    shape = graph.type_of(graph.outputs[0]).shape
    ins = [Buffer(f"in{k}", shape) for k in range(len(graph.inputs))]
    out = Buffer("out0", shape, role="out")
    idx = tuple(Var(f"i{d}") for d in range(len(shape)))
    sc = Scalars()
    vals = {name: buf[idx] for name, buf in zip(graph.inputs, ins)}
    stmts = []
    for node in graph.nodes:
        pre, e = ew_expr(node.op, [vals[i] for i in node.inputs], node.attrs, "f32", sc)
        v = sc.new("f32", "v")
        stmts += pre + [Assign(v, e)]
        vals[node.outputs[0]] = v
    body = stmts + [Store(out, idx, vals[graph.outputs[0]])]
    for v, n in zip(reversed(idx), shape):
        body = [Loop(v, 0, n, 1, tuple(body))]
    return Kernel("fused_chain", tuple(ins + [out]), tuple(body))
