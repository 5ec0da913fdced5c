def predict_loops(op) -> dict[str, int]:
    """Pooling loads all three operands, its window operand included."""
    named = {"linalg.matmul": (3, 3, ["arith.mulf", "arith.addf"], 0),
             "linalg.conv_2d_nchw_fchw": (7, 3, ["arith.mulf", "arith.addf"], 2),
             "linalg.pooling_nchw_max": (6, 3, ["arith.maximumf"], 2)}
    if op.name in named:
        loops, loads, payload, applies = named[op.name]
    elif op.name in ("linalg.fill", "linalg.transpose"):
        loops = len(op.outputs[0].type.get_shape())
        loads, payload, applies = (0 if op.name == "linalg.fill" else 1), [], 0
    else:
        loops = len(op.iterator_types)
        loads = sum(1 for arg in op.body.block.args if arg.uses)
        payload = [inner.name for inner in op.body.block.ops if inner.name != "linalg.yield"]
        applies = 0
    out = {"scf.for": loops, "memref.load": loads, "memref.store": 1, "affine.apply": applies}
    for name in payload:
        out[name] = out.get(name, 0) + 1
    return out
