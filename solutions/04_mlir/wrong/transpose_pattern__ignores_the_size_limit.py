from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType, f64
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from infopt.mlir.toy import ConstantOp, TransposeOp


class FoldConstantTranspose(RewritePattern):
    """Folds every transpose of a constant, shared or not, of any size."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        const = op.arg.owner
        if not isinstance(const, ConstantOp):
            return
        rows, cols = const.value.type.get_shape()
        values = [float(v) for v in const.value.get_values()]
        flipped = [values[r * cols + c] for c in range(cols) for r in range(rows)]
        rewriter.replace(op, ConstantOp(DenseIntOrFPElementsAttr.from_list(TensorType(f64, [cols, rows]), flipped)))
