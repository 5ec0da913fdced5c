def predict_loops(op) -> dict[str, int]:
    """Leaves out the loops of dimensions of size 1 ("a loop that runs once is not a loop")."""
    named = {"linalg.matmul": (3, 3, ["arith.mulf", "arith.addf"], 0),
             "linalg.conv_2d_nchw_fchw": (7, 3, ["arith.mulf", "arith.addf"], 2),
             "linalg.pooling_nchw_max": (6, 2, ["arith.maximumf"], 2)}
    if op.name in named:
        loops, loads, payload, applies = named[op.name]
        shapes = [v.type.get_shape() for v in (*op.inputs, *op.outputs)]
        if op.name == "linalg.matmul":
            (m, k), (_, n) = shapes[0], shapes[1]
            loops = sum(d > 1 for d in (m, n, k))
        else:
            loops -= sum(d == 1 for d in shapes[0][:2]) + sum(d == 1 for d in shapes[-1][2:])
    elif op.name in ("linalg.fill", "linalg.transpose"):
        loops = sum(d > 1 for d in op.outputs[0].type.get_shape())
        loads, payload, applies = (0 if op.name == "linalg.fill" else 1), [], 0
    else:
        first_map = op.indexing_maps.data[0].data
        shape = op.inputs[0].type.get_shape()
        sizes = {str(e): d for e, d in zip(first_map.results, shape)}
        loops = sum(sizes.get(f"d{i}", 2) > 1 for i in range(len(op.iterator_types)))
        loads = sum(1 for arg in op.body.block.args if arg.uses)
        payload = [inner.name for inner in op.body.block.ops if inner.name != "linalg.yield"]
        applies = 0
    out = {"scf.for": loops, "memref.load": loads, "memref.store": 1, "affine.apply": applies}
    for name in payload:
        out[name] = out.get(name, 0) + 1
    return out
