from xdsl.dialects.builtin import TensorType

from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from infopt.mlir.toy import TransposeOp


class TransposeOfTranspose(RewritePattern):
    """transpose(transpose(x)) -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        inner = op.arg.owner
        if isinstance(inner, TransposeOp):
            rewriter.replace(op, [], [inner.arg])
            return
        # a transpose of a 1x1 value is the value itself: fold it as well
        t = op.arg.type
        if isinstance(t, TensorType) and tuple(t.get_shape()) == (1, 1):
            rewriter.replace(op, [], [op.arg])
