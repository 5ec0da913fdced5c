def fuse_chain(graph: Graph) -> Kernel:
    """Reuses one scalar for every node's value: right for a straight chain, wrong once a value is read again
    after a later node overwrote it."""
    shape = graph.type_of(graph.outputs[0]).shape
    ins = [Buffer(f"in{k}", shape) for k in range(len(graph.inputs))]
    out = Buffer("out0", shape, role="out")
    idx = tuple(Var(f"i{d}") for d in range(len(shape)))
    sc = Scalars()
    t = Var("t", "f32")
    vals = {name: buf[idx] for name, buf in zip(graph.inputs, ins)}
    stmts = []
    for node in graph.nodes:
        pre, e = ew_expr(node.op, [vals[i] for i in node.inputs], node.attrs, "f32", sc)
        stmts += pre + [Assign(t, e)]
        vals[node.outputs[0]] = t
    body = stmts + [Store(out, idx, vals[graph.outputs[0]])]
    for v, n in reversed(list(zip(idx, shape))):
        body = [Loop(v, 0, n, 1, tuple(body))]
    return Kernel("fused_chain", tuple(ins + [out]), tuple(body))
