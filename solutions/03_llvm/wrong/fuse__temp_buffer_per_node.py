def fuse_chain(graph: Graph) -> Kernel:
    """Keeps every intermediate in a temp buffer of its own, written and read back in the one loop."""
    shape = graph.type_of(graph.outputs[0]).shape
    ins = [Buffer(f"in{k}", shape) for k in range(len(graph.inputs))]
    out = Buffer("out0", shape, role="out")
    idx = tuple(Var(f"i{d}") for d in range(len(shape)))
    sc = Scalars()
    vals = {name: buf[idx] for name, buf in zip(graph.inputs, ins)}
    stmts, temps = [], []
    for node in graph.nodes:
        pre, e = ew_expr(node.op, [vals[i] for i in node.inputs], node.attrs, "f32", sc)
        tmp = Buffer(f"tmp{len(temps)}", shape, role="temp")
        temps.append(tmp)
        stmts += pre + [Store(tmp, idx, e)]
        vals[node.outputs[0]] = tmp[idx]
    body = stmts + [Store(out, idx, vals[graph.outputs[0]])]
    for v, n in reversed(list(zip(idx, shape))):
        body = [Loop(v, 0, n, 1, tuple(body))]
    return Kernel("fused_chain", tuple(ins + [out] + temps), tuple(body))
