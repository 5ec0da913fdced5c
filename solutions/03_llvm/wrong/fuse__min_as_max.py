def fuse_chain(graph: Graph) -> Kernel:
    """Its own op table instead of ew_expr, with a copy-paste slip: Min uses maximum."""
    shape = graph.type_of(graph.outputs[0]).shape
    ins = [Buffer(f"in{k}", shape) for k in range(len(graph.inputs))]
    out = Buffer("out0", shape, role="out")
    idx = tuple(Var(f"i{d}") for d in range(len(shape)))
    sc = Scalars()
    vals = {name: buf[idx] for name, buf in zip(graph.inputs, ins)}
    stmts = []
    for node in graph.nodes:
        x = [vals[i] for i in node.inputs]
        table = {"Add": lambda: x[0] + x[1], "Sub": lambda: x[0] - x[1], "Mul": lambda: x[0] * x[1],
                 "Max": lambda: maximum(x[0], x[1]), "Min": lambda: maximum(x[0], x[1]),
                 "Relu": lambda: maximum(x[0], Const(0.0, "f32")), "Neg": lambda: -x[0]}
        pre, e = [], table[node.op]()
        v = sc.new("f32", "v")
        stmts += pre + [Assign(v, e)]
        vals[node.outputs[0]] = v
    body = stmts + [Store(out, idx, vals[graph.outputs[0]])]
    for v, n in reversed(list(zip(idx, shape))):
        body = [Loop(v, 0, n, 1, tuple(body))]
    return Kernel("fused_chain", tuple(ins + [out]), tuple(body))
