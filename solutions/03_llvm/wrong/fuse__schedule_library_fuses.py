from infopt.schedule.chains import fused_chain


def fuse_chain(graph: Graph) -> Kernel:
    """One loop nest computing a chain of same-shape elementwise nodes, intermediates in local scalars."""
    # write the chain node by node (one loop nest and one temp buffer per node), then let the schedule
    # primitives fuse the loops and keep the temps in registers
    shape = tuple(graph.type_of(graph.outputs[0]).shape)
    ins = [Buffer(f"in{k}", shape) for k in range(len(graph.inputs))]
    out = Buffer("out0", shape, role="out")
    temps = [Buffer(f"t{k}", shape, role="temp") for k in range(len(graph.nodes))]
    src = {name: ins[k] for k, name in enumerate(graph.inputs)}

    def nest(tag, stmt_of):
        idx = tuple(Var(f"{tag}_{d}" if d == 0 else f"i{d}") for d in range(len(shape)))
        body = [stmt_of(idx)]
        for v, m in reversed(list(zip(idx, shape))):
            body = [loop(v, m, body=body)]
        return body[0]

    body = []
    for k, n in enumerate(graph.nodes):
        def stmt(idx, n=n, k=k):
            _, e = ew_expr(n.op, [src[i][idx] for i in n.inputs], n.attrs, "f32", Scalars())
            return Store(temps[k], idx, e)
        body.append(nest(f"n{k}", stmt))
        src[n.outputs[0]] = temps[k]
    body.append(nest("o", lambda idx: Store(out, idx, temps[-1][idx])))
    k = fused_chain(Kernel("chain", tuple(ins + [out] + temps), body))
    return k
