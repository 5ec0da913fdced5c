"""The one generic walk: traversals use only children/rebuild, so a new expression kind needs no other edit."""
from dataclasses import dataclass

import numpy as np
import pytest

from infopt.codegen import (
    Assign, Buffer, Expr, If, Kernel, KernelError, OutOfBoundsError, Store, Var, cmp, loop, verify_kernel,
)
from infopt.codegen.walk import (
    accesses, free_vars, iter_exprs, iter_postorder, iter_scoped, loop_path, map_body, map_expr, replace_loop,
    stmt_at, substitute, substitute_stmt,
)
from infopt.schedule import split


@dataclass(frozen=True, eq=True, repr=False)
class Clamp(Expr):
    """A kind the library has never heard of: ``clamp(x, lo, hi)``; children and rebuild come from CHILDREN."""

    x: Expr
    lo: Expr
    hi: Expr
    CHILDREN = ("x", "lo", "hi")

    @property
    def dtype(self) -> str:
        return self.x.dtype

    def type_error(self):
        if len({self.x.dtype, self.lo.dtype, self.hi.dtype}) != 1:
            return f"`{self.text()}`: clamp needs one dtype, got {self.x.dtype}, {self.lo.dtype}, {self.hi.dtype}"
        return None


def _clamp_kernel(n=10, index_shift=0, lo_dtype="f32", lo_var="lo"):
    X, Y = Buffer("X", (n,)), Buffer("Y", (n,), role="out")
    i = Var("i")
    lo = Var(lo_var, lo_dtype)
    body = [Assign(Var("lo", lo_dtype), 0.0 if lo_dtype == "f32" else 0),
            loop(i, n, body=Store(Y, (i,), Clamp(X[i + index_shift if index_shift else i] * 2.0, lo, X[0])))]
    return Kernel("clamped", (X, Y), body)


def test_new_kind_substitutes_and_iterates_without_other_edits():
    i, j = Var("i"), Var("j")
    X = Buffer("X", (8,))
    e = Clamp(X[i] + 1.0, X[j], X[i * 2])
    assert e.src == (X[i] + 1.0, X[j], X[i * 2])
    s = substitute(e, {"i": j + 1})
    assert isinstance(s, Clamp) and s.x == X[j + 1] + 1.0 and s.hi == X[(j + 1) * 2] and s.lo == X[j]
    assert free_vars(e) == {"i", "j"} and free_vars(s) == {"j"}
    kinds = [type(x).__name__ for x in iter_exprs(e)]
    assert kinds[0] == "Clamp" and kinds.count("Load") == 3
    assert [type(x).__name__ for x in iter_postorder(e)][-1] == "Clamp"
    assert str(e) == "clamp(X[i] + 1.0, X[j], X[i * 2])"   # the generic text form of an unknown kind


def test_new_kind_is_verified_through_its_children_and_its_own_rule():
    assert verify_kernel(_clamp_kernel()).name == "clamped"
    with pytest.raises(OutOfBoundsError, match=r"buffer X, index \[i \+ 1\] = \[10\], shape \(10,\), at loop values i=9"):
        verify_kernel(_clamp_kernel(index_shift=1))
    with pytest.raises(KernelError, match="clamp needs one dtype"):
        verify_kernel(_clamp_kernel(lo_dtype="f64"))
    with pytest.raises(KernelError, match="'nope' is used before it is defined"):
        verify_kernel(_clamp_kernel(lo_var="nope"))


def test_new_kind_goes_through_a_schedule_primitive():
    k = split(_clamp_kernel(n=12), "i", 4)
    text = str(k)
    assert "for io in 0..12 step 4" in text and "clamp(X[io + ii] * 2.0, lo, X[0])" in text
    loads = [(b.name, tuple(str(i) for i in ix)) for _, b, ix, w in accesses(k.body) if not w]
    assert ("X", ("io + ii",)) in loads


def test_map_expr_rebuilds_bottom_up_and_keeps_untouched_nodes():
    i = Var("i")
    X = Buffer("X", (4,))
    e = X[i] * 2.0 + X[i]
    seen = []
    out = map_expr(e, lambda x: seen.append(type(x).__name__) or x)
    assert out is e, "an identity map returns the very same node"
    assert seen.index("Var") < seen.index("Load") < seen.index("Bin")
    doubled = map_expr(e, lambda x: x * 2.0 if getattr(x, "buffer", None) is X else x)
    assert str(doubled) == "X[i] * 2.0 * 2.0 + X[i] * 2.0"


def test_substitute_stmt_respects_the_loops_own_variable():
    X, Y = Buffer("X", (8, 8)), Buffer("Y", (8, 8), role="out")
    i, j = Var("i"), Var("j")
    inner = loop(j, i, 8, body=Store(Y, (i, j), X[i, j]))
    moved = substitute_stmt(inner, {"i": Var("k"), "j": Var("zzz")})
    assert str(moved).splitlines()[0] == "for j in k..8 {" and "Y[k, j] = X[k, j]" in str(moved)


def test_scoped_paths_find_statements_in_both_branches_of_an_if():
    X, Y = Buffer("X", (6,)), Buffer("Y", (6,), role="out")
    i = Var("i")
    body = (loop(i, 6, body=If(cmp("<", i, 3), [Store(Y, (i,), X[i])], [Store(Y, (i,), X[i] * 2.0),
                                                                           Store(Y, (i,), X[i] + 1.0)])),)
    items = list(iter_scoped(body))
    stores = [(p, [type(a).__name__ for a, _ in anc], [b for _, b in anc]) for s, p, anc in items if isinstance(s, Store)]
    assert [p for p, _, _ in stores] == [(0, 0, 0), (0, 0, 1), (0, 0, 2)]
    assert stores[2][1] == ["Loop", "If"] and stores[2][2] == [0, 1]   # the else-branch is body 1 of the if
    for s, p, _ in items:
        assert stmt_at(body, p) is s


def test_replace_loop_and_loop_path_and_map_body():
    X, Y = Buffer("X", (4, 5)), Buffer("Y", (4, 5), role="out")
    i, j = Var("i"), Var("j")
    k = Kernel("copy", (X, Y), (loop(i, 4, body=loop(j, 5, body=Store(Y, (i, j), X[i, j]))),))
    assert [lp.var.name for lp in loop_path(k.body, "j")] == ["i", "j"]
    k2 = replace_loop(k, "j", lambda lp: lp.rebuild(bodies=(lp.body + lp.body,)))
    assert str(k2).count("Y[i, j] = X[i, j]") == 2
    doubled = map_body(k.body, stmt_fn=lambda s: (s, s) if isinstance(s, Store) else s)
    assert str(Kernel("d", k.buffers, doubled)).count("Y[i, j]") == 2
    with pytest.raises(KernelError, match="no loop over 'q'"):
        replace_loop(k, "q", lambda lp: lp)
    np.testing.assert_equal(verify_kernel(k2).name, "copy")


def test_an_identity_map_over_a_body_keeps_every_node():
    X, Y = Buffer("X", (4, 5)), Buffer("Y", (4, 5), role="out")
    i, j = Var("i"), Var("j")
    body = (loop(i, 4, body=[loop(j, 5, body=Store(Y, (i, j), X[i, j])),
                             If(cmp("<", i, 2), [Store(Y, (i, 0), 1.0)])]),)
    out = map_body(body, stmt_fn=lambda s: s, expr_fn=lambda e: e)
    assert out[0] is body[0]
