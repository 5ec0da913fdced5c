"""Chapter 3 of the tutorial: Toy's canonicalizations as xDSL rewrite patterns.

- transpose(transpose(x)) -> x
- reshape(reshape(x)) -> reshape(x)
- reshape(x) -> x when the types already agree
- reshape(constant) -> a constant of the new shape

`canonicalize(module)` applies them greedily, then removes the ops left without users.
"""
from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr
from xdsl.pattern_rewriter import (GreedyRewritePatternApplier, PatternRewriter, PatternRewriteWalker, RewritePattern,
                                   op_type_rewrite_pattern)

from .dialect import ConstantOp, ReshapeOp, TransposeOp


class SimplifyRedundantTranspose(RewritePattern):
    """transpose(transpose(x)) -> x: the outer transpose's uses read x instead (the inner one dies if unused)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        inner = op.arg.owner
        if isinstance(inner, TransposeOp):
            rewriter.replace(op, [], [inner.arg])


class ReshapeReshape(RewritePattern):
    """reshape(reshape(x)) -> reshape(x)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReshapeOp, rewriter: PatternRewriter) -> None:
        inner = op.arg.owner
        if isinstance(inner, ReshapeOp):
            rewriter.replace(op, ReshapeOp(inner.arg, tuple(op.res.type.get_shape())))


class RedundantReshape(RewritePattern):
    """reshape(x) -> x when x already has the result's type."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReshapeOp, rewriter: PatternRewriter) -> None:
        if op.arg.type == op.res.type:
            rewriter.replace(op, [], [op.arg])


class FoldConstantReshape(RewritePattern):
    """reshape(constant) -> the constant with the new shape."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReshapeOp, rewriter: PatternRewriter) -> None:
        const = op.arg.owner
        if isinstance(const, ConstantOp):
            values = [float(v) for v in const.value.get_values()]
            rewriter.replace(op, ConstantOp(DenseIntOrFPElementsAttr.from_list(op.res.type, values)))


PATTERNS = (SimplifyRedundantTranspose, ReshapeReshape, RedundantReshape, FoldConstantReshape)


def remove_dead(module: Any) -> int:
    """Erase pure ops whose results nobody uses (repeatedly); returns how many were erased."""
    from xdsl.traits import is_side_effect_free
    from xdsl.rewriter import Rewriter

    erased, changed = 0, True
    while changed:
        changed = False
        for op in list(module.walk()):
            if op.results and all(not r.uses for r in op.results) and is_side_effect_free(op):
                Rewriter.erase_op(op)
                erased += 1
                changed = True
    return erased


def apply_patterns(module: Any, patterns: list[RewritePattern]) -> Any:
    """Apply `patterns` greedily until nothing matches, then remove dead ops; returns the module."""
    PatternRewriteWalker(GreedyRewritePatternApplier(list(patterns)), apply_recursively=True).rewrite_module(module)
    remove_dead(module)
    return module


def canonicalize(module: Any) -> Any:
    """Toy's chapter-3 canonicalizations, to a fixpoint, and dead-code removal (in place)."""
    return apply_patterns(module, [p() for p in PATTERNS])
