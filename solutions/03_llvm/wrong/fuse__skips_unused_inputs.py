def fuse_chain(graph: Graph) -> Kernel:
    """Makes buffers only for the graph inputs some node reads (as fuse_elementwise_chain does)."""
    shape = graph.type_of(graph.outputs[0]).shape
    read = [i for i in graph.inputs if any(i in node.inputs for node in graph.nodes)]
    ins = [Buffer(f"in{k}", shape) for k in range(len(read))]
    out = Buffer("out0", shape, role="out")
    idx = tuple(Var(f"i{d}") for d in range(len(shape)))
    sc = Scalars()
    vals = {name: buf[idx] for name, buf in zip(read, ins)}
    stmts = []
    for node in graph.nodes:
        pre, e = ew_expr(node.op, [vals[i] for i in node.inputs], node.attrs, "f32", sc)
        v = sc.new("f32", "v")
        stmts += pre + [Assign(v, e)]
        vals[node.outputs[0]] = v
    body = stmts + [Store(out, idx, vals[graph.outputs[0]])]
    for v, n in reversed(list(zip(idx, shape))):
        body = [Loop(v, 0, n, 1, tuple(body))]
    return Kernel("fused_chain", tuple(ins + [out]), tuple(body))
