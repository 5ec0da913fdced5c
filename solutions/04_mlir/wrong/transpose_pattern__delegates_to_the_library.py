from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from infopt.mlir.toy import patterns


class FoldConstantTranspose(RewritePattern):
    """Hands every op to the library's pattern."""

    def match_and_rewrite(self, op, rewriter: PatternRewriter) -> None:
        patterns.FoldConstantTranspose().match_and_rewrite(op, rewriter)
