from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from infopt.mlir.toy import TransposeOp


class TransposeOfTranspose(RewritePattern):
    """transpose(transpose(x)) -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        """Forgets to check the operand: every transpose is replaced by its operand."""
        rewriter.replace(op, [], [op.arg])
