# WRONG ANSWER (predict_loops): index-arithmetic rule: one affine.apply per index of a LOADED or stored operand that is an expression. This
# answer counts the expression indices of every memref operand, read or not, so an unused input indexed d0 + d1
# gets affine.applys mlir-opt never writes.
from xdsl.dialects.builtin import MemRefType
from xdsl.ir.affine import AffineDimExpr

# The implicit payloads of the named ops, read off `mlir-opt --linalg-generalize-named-ops`:
# which operands (ins..., outs...) the payload reads, and the ops it runs.
_NAMED = {
    "linalg.matmul": ([True, True, True], ["arith.mulf", "arith.addf"]),
    "linalg.fill": ([True, False], []),
    "linalg.transpose": ([True, False], []),
    "linalg.conv_2d_nchw_fchw": ([True, True, True], ["arith.mulf", "arith.addf"]),
    "linalg.pooling_nchw_max": ([True, False, True], ["arith.maximumf"]),
}


def _is_expr(e) -> bool:
    return not isinstance(e, AffineDimExpr)


def predict_loops(op) -> dict[str, int]:
    """{op name: count} that --convert-linalg-to-loops writes for the linalg op `op`."""
    maps = [m.data for m in op.get_indexing_maps()]
    out = {"scf.for": maps[0].num_dims, "memref.store": 1}
    if op.name == "linalg.generic":
        used = [bool(list(a.uses)) for a in op.body.block.args]
        payload = [o.name for o in op.body.block.ops if o.name != "linalg.yield"]
    else:
        used, payload = _NAMED[op.name]
    loads = applies = 0
    for i, (v, m) in enumerate(zip(op.operands, maps)):
        if not isinstance(v.type, MemRefType):
            continue
        applies += sum(_is_expr(e) for e in m.results)
        if used[i]:
            loads += 1
    out["memref.load"] = loads
    out["affine.apply"] = applies
    for p in payload:
        out[p] = out.get(p, 0) + 1
    return out
