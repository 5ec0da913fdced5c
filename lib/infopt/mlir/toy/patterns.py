"""Chapter 3 of the tutorial: Toy's canonicalizations as xDSL rewrite patterns.

- transpose(transpose(x)) -> x
- reshape(reshape(x)) -> reshape(x)
- reshape(x) -> x when the types already agree
- reshape(constant) -> a constant of the new shape

`canonicalize(module)` applies them greedily, then removes the ops left without users. `FoldConstantTranspose`
(transpose(constant) -> the transposed constant, under its legality rule) is unit 04's exercise 4: not one of the
canonicalizations, and `apply_pattern_class` is how its tests apply a pattern class alone, wherever it runs.
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


MAX_SHARED_FOLD = 16   # elements: a constant with other users is duplicated by a fold only up to this size


class FoldConstantTranspose(RewritePattern):
    """transpose(constant) -> a constant holding the transposed data, when legal: the operand is a `toy.constant`,
    and, when that constant has other users too (so it stays, and the fold adds a second copy), it holds at most
    MAX_SHARED_FOLD elements."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        const = op.arg.owner
        if not isinstance(const, ConstantOp):
            return
        shape = tuple(const.value.type.get_shape())
        shared = any(use.operation is not op for use in const.res.uses)
        if shared and len(const.value.get_values()) > MAX_SHARED_FOLD:
            return
        import numpy as np
        from xdsl.dialects.builtin import TensorType, f64

        data = np.array([float(v) for v in const.value.get_values()]).reshape(shape).T
        new_type = TensorType(f64, list(data.shape))
        rewriter.replace(op, ConstantOp(DenseIntOrFPElementsAttr.from_list(new_type, data.ravel().tolist())))


PATTERNS = (SimplifyRedundantTranspose, ReshapeReshape, RedundantReshape, FoldConstantReshape)
# by name, not by object: while a test's `forbid` is up the library's classes are tripwires, which must not be touched
_LIBRARY_PATTERNS = frozenset(c.__name__ for c in (*PATTERNS, FoldConstantTranspose))


def apply_pattern_class(pattern_class: Any, module: Any) -> Any:
    """A copy of `module` with one instance of `pattern_class` applied greedily (then dead ops removed). At grading a
    student's class is a name in their kernel: the application runs there, and the module crosses as MLIR text."""
    if getattr(pattern_class, "__infopt_remote__", False):
        return pattern_class.via("infopt.mlir.toy.patterns:apply_pattern_class", module)
    if not (isinstance(pattern_class, type) and issubclass(pattern_class, RewritePattern)):
        raise TypeError(f"the pattern must be a class deriving from xdsl's RewritePattern, got {pattern_class!r}")
    library = [c.__name__ for c in pattern_class.__mro__[1:]
               if c.__module__ == __name__ and c.__name__ in _LIBRARY_PATTERNS]
    if library:
        raise TypeError(f"{pattern_class.__name__} subclasses the library's {library[0]}: write the pattern yourself")
    return apply_patterns(module.clone(), [pattern_class()])


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


class PatternsDidNotConverge(RuntimeError):
    """The greedy driver stopped: the patterns kept rewriting without reaching a fixpoint."""


class _CountedRewrites(RewritePattern):
    """Wraps the patterns' applier and raises PatternsDidNotConverge past `limit` rewrites (xDSL's walker has no
    bound of its own; MLIR's greedy driver gives up after 10 sweeps for the same reason)."""

    def __init__(self, applier: RewritePattern, limit: int, ops: int) -> None:
        self.applier, self.limit, self.ops, self.rewrites = applier, limit, ops, 0

    def match_and_rewrite(self, op: Any, rewriter: PatternRewriter) -> None:
        self.applier.match_and_rewrite(op, rewriter)
        if rewriter.has_done_action:
            self.rewrites += 1
            if self.rewrites > self.limit:
                raise PatternsDidNotConverge(
                    f"the patterns kept rewriting: {self.rewrites} rewrites of a module of {self.ops} ops reached no "
                    f"fixpoint (a pattern that rewrites an op into one it matches again, or that reports a change "
                    f"when it makes none, never stops)")


def apply_patterns(module: Any, patterns: list[RewritePattern], rewrites_per_op: int = 16) -> Any:
    """Apply `patterns` greedily until nothing matches, then remove dead ops; returns the module. Raises
    PatternsDidNotConverge after more than `rewrites_per_op` rewrites per op of the module (plus 64)."""
    ops = sum(1 for _ in module.walk())
    counted = _CountedRewrites(GreedyRewritePatternApplier(list(patterns)), rewrites_per_op * ops + 64, ops)
    PatternRewriteWalker(counted, apply_recursively=True).rewrite_module(module)
    remove_dead(module)
    return module


def canonicalize(module: Any) -> Any:
    """Toy's chapter-3 canonicalizations, to a fixpoint, and dead-code removal (in place)."""
    return apply_patterns(module, [p() for p in PATTERNS])
