def fuse_conv_bn_relu(graph: Graph) -> Graph:
    """Fused chains (the conv's attributes not carried over)."""
    g = graph.copy()
    consumers = g.consumers()

    def only_reader(value):
        readers = consumers.get(value, [])
        return readers[0] if len(readers) == 1 and value not in g.outputs else None

    dead, new = set(), {}
    for conv in [n for n in g.nodes if n.op == "Conv"]:
        bn = only_reader(conv.outputs[0])
        if bn is None or bn.op != "BatchNormalization":
            continue
        relu = only_reader(bn.outputs[0])
        if relu is None or relu.op != "Relu":
            continue
        params = conv.inputs[1:] + bn.inputs[1:]
        if not all(p in g.initializers for p in params):
            continue
        w = g.initializers[conv.inputs[1]]
        b = g.initializers[conv.inputs[2]] if len(conv.inputs) > 2 else None
        scale, bias, mean, var = (g.initializers[p] for p in bn.inputs[1:5])
        w2, b2 = P.fold_bn_into_conv(w, b, scale, bias, mean, var, float(bn.attrs.get("epsilon", 1e-5)))
        ins = [conv.inputs[0], g.add_initializer(g.fresh_name("w"), w2), g.add_initializer(g.fresh_name("b"), b2)]
        new[id(relu)] = Node("FusedConv", ins, list(relu.outputs), {"activation": "Relu"},
                             g.fresh_name("FusedConv"))
        dead |= {id(conv), id(bn)}
    g.nodes = [new.get(id(n), n) for n in g.nodes if id(n) not in dead]
    g.prune_initializers()
    return g
