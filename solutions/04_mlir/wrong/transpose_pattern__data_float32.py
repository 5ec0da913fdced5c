from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType, f64

from infopt.mlir.toy import ConstantOp


class FoldConstantTranspose(RewritePattern):
    """transpose(constant) -> the transposed constant (legal: see the rule)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        source = op.arg.owner
        if not isinstance(source, ConstantOp):
            return
        import numpy as np
        values = np.array(list(source.value.get_values()), dtype=np.float32).tolist()
        rows, cols = source.value.type.get_shape()
        others = [u for u in source.res.uses if u.operation is not op]
        if others and len(values) > 16:
            return
        flipped = [values[r * cols + c] for c in range(cols) for r in range(rows)]
        folded = ConstantOp(DenseIntOrFPElementsAttr.from_list(TensorType(f64, [cols, rows]), flipped))
        rewriter.replace(op, folded)
