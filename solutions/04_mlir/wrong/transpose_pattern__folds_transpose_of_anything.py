from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType, f64
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from infopt.mlir.toy import ConstantOp, TransposeOp


class FoldConstantTranspose(RewritePattern):
    """Takes any single-operand defining op as a constant: a transpose of a transpose becomes its inner operand."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        inner = op.arg.owner
        if isinstance(inner, TransposeOp):
            rewriter.replace(op, [], [inner.arg])
            return
        if not isinstance(inner, ConstantOp):
            return
        rows, cols = inner.value.type.get_shape()
        values = [float(v) for v in inner.value.get_values()]
        if any(use.operation is not op for use in inner.res.uses) and len(values) > 16:
            return
        flipped = [values[r * cols + c] for c in range(cols) for r in range(rows)]
        rewriter.replace(op, ConstantOp(DenseIntOrFPElementsAttr.from_list(TensorType(f64, [cols, rows]), flipped)))
