def lower_binary(graph: Graph, node) -> Kernel:
    """Reads size-1 dimensions at index 0 only for in1: in0 is assumed to have the output's shape."""
    a_shape, b_shape = graph.type_of(node.inputs[0]).shape, graph.type_of(node.inputs[1]).shape
    out_shape = graph.type_of(node.outputs[0]).shape
    A, B = Buffer("in0", a_shape), Buffer("in1", b_shape)
    O = Buffer("out0", out_shape, role="out")
    idx = [Var(f"i{d}") for d in range(len(out_shape))]

    def read(buf: Buffer):
        off = len(out_shape) - buf.rank
        return buf[tuple(Const(0, "i64") if n == 1 else idx[off + d] for d, n in enumerate(buf.shape))]

    a, b = A[tuple(idx[len(out_shape) - A.rank + d] for d in range(A.rank))], read(B)
    value = {"Add": lambda: a + b, "Sub": lambda: a - b, "Mul": lambda: a * b, "Div": lambda: a / b,
             "Max": lambda: maximum(a, b), "Min": lambda: minimum(a, b)}[node.op]()
    body = [Store(O, tuple(idx), value)]
    for v, n in reversed(list(zip(idx, out_shape))):
        body = [Loop(v, 0, n, 1, tuple(body))]
    return Kernel(f"lowered_{node.op.lower()}", (A, B, O), tuple(body))
