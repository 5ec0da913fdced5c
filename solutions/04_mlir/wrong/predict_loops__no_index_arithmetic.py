def predict_loops(op) -> dict[str, int]:
    """Forgets the affine.apply ops that compute conv's and pooling's window indices (oh * s + kh, ...)."""
    named = {"linalg.matmul": (3, 3, ["arith.mulf", "arith.addf"]),
             "linalg.conv_2d_nchw_fchw": (7, 3, ["arith.mulf", "arith.addf"]),
             "linalg.pooling_nchw_max": (6, 2, ["arith.maximumf"])}
    if op.name in named:
        loops, loads, payload = named[op.name]
    elif op.name in ("linalg.fill", "linalg.transpose"):
        loops = len(op.outputs[0].type.get_shape())
        loads, payload = (0 if op.name == "linalg.fill" else 1), []
    else:
        loops = len(op.iterator_types)
        loads = sum(1 for arg in op.body.block.args if arg.uses)
        payload = [inner.name for inner in op.body.block.ops if inner.name != "linalg.yield"]
    out = {"scf.for": loops, "memref.load": loads, "memref.store": 1}
    for name in payload:
        out[name] = out.get(name, 0) + 1
    return out
