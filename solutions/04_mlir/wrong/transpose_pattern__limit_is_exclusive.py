from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType, f64
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from infopt.mlir.toy import ConstantOp, TransposeOp


class FoldConstantTranspose(RewritePattern):
    """A shared constant is folded only below 16 elements (16 itself is left)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        const = op.arg.owner
        if not isinstance(const, ConstantOp):
            return
        rows, cols = const.value.type.get_shape()
        values = [float(v) for v in const.value.get_values()]
        if any(use.operation is not op for use in const.res.uses) and len(values) >= 16:
            return
        flipped = [values[r * cols + c] for c in range(cols) for r in range(rows)]
        rewriter.replace(op, ConstantOp(DenseIntOrFPElementsAttr.from_list(TensorType(f64, [cols, rows]), flipped)))
