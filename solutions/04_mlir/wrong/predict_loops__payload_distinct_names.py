def predict_loops(op) -> dict[str, int]:
    """{op name: count} that --convert-linalg-to-loops writes for the linalg op `op`."""
    name = op.name
    counts: dict[str, int] = {}

    def add(key, n=1):
        counts[key] = counts.get(key, 0) + n

    if name == "linalg.generic":
        add("scf.for", len(op.iterator_types))
        add("memref.load", sum(1 for a in op.body.block.args if a.uses))
        for kind in {inner.name for inner in op.body.block.ops}:
            if kind != "linalg.yield":
                add(kind)
    elif name == "linalg.matmul":
        add("scf.for", 3)
        add("memref.load", 3)
        add("arith.mulf")
        add("arith.addf")
    elif name == "linalg.fill":
        add("scf.for", len(op.outputs[0].type.get_shape()))
    elif name == "linalg.transpose":
        add("scf.for", len(op.outputs[0].type.get_shape()))
        add("memref.load", 1)
    elif name == "linalg.conv_2d_nchw_fchw":
        add("scf.for", 7)
        add("memref.load", 3)
        add("affine.apply", 2)
        add("arith.mulf")
        add("arith.addf")
    elif name == "linalg.pooling_nchw_max":
        add("scf.for", 6)
        add("memref.load", 2)
        add("affine.apply", 2)
        add("arith.maximumf")
    else:
        raise ValueError(f"unsupported op {name}")
    add("memref.store", 1)
    return counts
