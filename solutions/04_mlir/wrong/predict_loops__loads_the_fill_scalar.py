def predict_loops(op) -> dict[str, int]:
    """The five rules as the lesson states them, from the indexing maps and the payload (but it counts the fill scalar as a load)."""
    from xdsl.ir.affine import AffineDimExpr
    from xdsl.dialects.builtin import MemRefType

    maps = [m.data for m in op.get_indexing_maps()]
    block = op.regions[0].block
    operands = list(op.operands)
    loaded = [v for v, arg in zip(operands, block.args) if arg.uses]
    if op.name == "linalg.pooling_nchw_max":
        loaded = [operands[0], operands[2]]          # generalized: input and output, never the window
    out_val = operands[-1]
    applies = 0
    for v, m in zip(operands, maps):
        if v in loaded or v is out_val:
            applies += sum(1 for e in m.results if not isinstance(e, AffineDimExpr))
    out = {"scf.for": maps[0].num_dims, "memref.load": len(loaded), "memref.store": 1, "affine.apply": applies}
    if op.name == "linalg.generic":
        names = [o.name for o in block.ops if o.name != "linalg.yield"]
    else:
        names = {"linalg.matmul": ["arith.mulf", "arith.addf"], "linalg.conv_2d_nchw_fchw": ["arith.mulf", "arith.addf"],
                 "linalg.pooling_nchw_max": ["arith.maximumf"]}.get(op.name, [])
    for n in names:
        out[n] = out.get(n, 0) + 1
    return out
