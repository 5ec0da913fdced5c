def lower_binary(graph: Graph, node) -> Kernel:
    """One flat loop over every output element, the indices recovered with // and %: not one loop per dimension."""
    a_shape, b_shape = graph.type_of(node.inputs[0]).shape, graph.type_of(node.inputs[1]).shape
    out_shape = graph.type_of(node.outputs[0]).shape
    A, B = Buffer("in0", a_shape), Buffer("in1", b_shape)
    O = Buffer("out0", out_shape, role="out")
    flat = Var("f")
    idx, stride = [], 1
    for n in reversed(out_shape):
        idx.insert(0, (flat // stride) % n)
        stride *= n

    def read(buf: Buffer):
        off = len(out_shape) - buf.rank
        return buf[tuple(Const(0, "i64") if n == 1 else idx[off + d] for d, n in enumerate(buf.shape))]

    a, b = read(A), read(B)
    value = {"Add": lambda: a + b, "Sub": lambda: a - b, "Mul": lambda: a * b, "Div": lambda: a / b,
             "Max": lambda: maximum(a, b), "Min": lambda: minimum(a, b)}[node.op]()
    return Kernel(f"lowered_{node.op.lower()}", (A, B, O), (Loop(flat, 0, stride, 1, (Store(O, tuple(idx), value),)),))
