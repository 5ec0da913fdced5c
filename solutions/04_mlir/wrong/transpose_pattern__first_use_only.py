from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from infopt.mlir.toy import TransposeOp


class TransposeOfTranspose(RewritePattern):
    """transpose(transpose(x)) -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        inner = op.arg.owner
        if isinstance(inner, TransposeOp):
            x = inner.arg
            uses = list(op.res.uses)
            if len(uses) <= 1:
                rewriter.replace(op, [], [x])
            else:
                # redirect the consumer of the pair; the transpose stays for its other users
                use = uses[0]
                use.operation.operands[use.index] = x
