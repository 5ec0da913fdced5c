def lower_binary(graph: Graph, node) -> Kernel:
    """A kernel computing one broadcasting binary elementwise node: out0 = in0 <op> in1."""
    sa = tuple(graph.type_of(node.inputs[0]).shape)
    sb = tuple(graph.type_of(node.inputs[1]).shape)
    so = tuple(graph.type_of(node.outputs[0]).shape)
    A, B, O = Buffer("in0", sa), Buffer("in1", sb), Buffer("out0", so, role="out")
    idx = [Var(f"i{d}") for d in range(len(so))]

    def index(shape):
        off = len(so) - len(shape)
        return tuple(Const(0, "i64") if shape[k] == 1 else idx[off + k] for k in range(len(shape)))

    a, b = A[index(sa)], B[index(sb)]
    ops = {"Add": lambda: a + b, "Sub": lambda: a - b, "Mul": lambda: a * b, "Div": lambda: a / b,
           "Max": lambda: maximum(a, b), "Min": lambda: minimum(a, b)}
    body = [Store(O, tuple(idx), ops[node.op]())]
    for v, n in reversed(list(zip(idx, so))):
        body = [loop(v, n, body=body)]
    return Kernel(node.name or node.op, (A, B, O), body)
