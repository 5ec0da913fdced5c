def predict_loops(op) -> dict[str, int]:
    """Counts one loop per dimension of the OUTPUT: forgets the reduction loops (matmul's k, conv's c, kh, kw)."""
    named = {"linalg.matmul": (3, ["arith.mulf", "arith.addf"], 0),
             "linalg.conv_2d_nchw_fchw": (3, ["arith.mulf", "arith.addf"], 2),
             "linalg.pooling_nchw_max": (2, ["arith.maximumf"], 2)}
    loops = len(op.outputs[0].type.get_shape())
    if op.name in named:
        loads, payload, applies = named[op.name]
    elif op.name in ("linalg.fill", "linalg.transpose"):
        loads, payload, applies = (0 if op.name == "linalg.fill" else 1), [], 0
    else:
        loads = sum(1 for arg in op.body.block.args if arg.uses)
        payload = [inner.name for inner in op.body.block.ops if inner.name != "linalg.yield"]
        applies = 0
    out = {"scf.for": loops, "memref.load": loads, "memref.store": 1, "affine.apply": applies}
    for name in payload:
        out[name] = out.get(name, 0) + 1
    return out
