from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType, f64
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from infopt.mlir.toy import ConstantOp, ReshapeOp, TransposeOp


class FoldConstantTranspose(RewritePattern):
    """Also folds the transpose of a reshaped constant (its data is a constant too), reading the reshape's shape."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        const = op.arg.owner
        shape_from = const
        if isinstance(const, ReshapeOp) and isinstance(const.arg.owner, ConstantOp):
            const = const.arg.owner
        if not isinstance(const, ConstantOp):
            return
        shape = shape_from.res.type.get_shape() if shape_from is not const else const.value.type.get_shape()
        rows, cols = shape
        values = [float(v) for v in const.value.get_values()]
        if any(use.operation is not op for use in const.res.uses) and len(values) > 16:
            return
        flipped = [values[r * cols + c] for c in range(cols) for r in range(rows)]
        rewriter.replace(op, ConstantOp(DenseIntOrFPElementsAttr.from_list(TensorType(f64, [cols, rows]), flipped)))
