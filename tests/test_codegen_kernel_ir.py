"""Kernel IR: construction, printing, verification errors that name the statement, rewrites."""
import pytest

from infopt.codegen import Assign, Buffer, If, Kernel, KernelError, Store, Var, cmp, loop, verify_kernel
from infopt.codegen.walk import assigned_scalars, find_loop, map_loops, substitute_stmt


def _matvec(n=8, m=5):
    A, x, y = Buffer("A", (n, m)), Buffer("x", (m,)), Buffer("y", (n,), role="out")
    i, j, acc = Var("i"), Var("j"), Var("acc", "f32")
    body = [loop(i, n, body=[Assign(acc, 0.0), loop(j, m, body=[Assign(acc, acc + A[i, j] * x[j])]),
                             Store(y, (i,), acc)])]
    return Kernel("matvec", (A, x, y), body)


def test_printer_shows_loops_and_statements():
    text = str(_matvec())
    assert "kernel matvec(A: f32[8,5] in, x: f32[5] in, y: f32[8] out)" in text
    assert "for j in 0..5 {" in text and "acc: f32 = acc + A[i, j] * x[j]" in text and "y[i] = acc" in text


def test_verify_accepts_well_formed():
    assert verify_kernel(_matvec()).name == "matvec"


@pytest.mark.parametrize("case, fragment", [
    ("unknown", "is not an argument of the kernel"),
    ("rank", "has rank 1"),
    ("oob_const", "out of bounds"),
    ("oob_loop", "ranges over [1, 8]"),
    ("write_input", "cannot be written"),
    ("undefined", "used before it is defined"),
    ("dtype", "mixes f32 and f64"),
    ("shadow", "already defined"),
])
def test_verify_rejects_ill_formed_naming_the_statement(case, fragment):
    X, Y, Z = Buffer("X", (8,)), Buffer("Y", (8,), role="out"), Buffer("Z", (8,))
    i, j = Var("i"), Var("j")
    body = {
        "unknown": [loop(i, 8, body=[Store(Y, (i,), Z[i])])],
        "rank": [loop(i, 8, body=[Store(Y, (i,), Buffer("X", (8,))[i, i])])],
        "oob_const": [Store(Y, (8,), X[0])],
        "oob_loop": [loop(i, 8, body=[Store(Y, (i,), X[i + 1])])],
        "write_input": [loop(i, 8, body=[Store(X, (i,), Y[i])])],
        "undefined": [Store(Y, (0,), X[j])],
        "dtype": [loop(i, 8, body=[Store(Y, (i,), X[i] + Var("s", "f64"))])],
        "shadow": [loop(i, 8, body=[loop(i, 8, body=[Store(Y, (i,), X[i])])])],
    }[case]
    if case == "dtype":
        body = [Assign(Var("s", "f64"), 1.0)] + body
    with pytest.raises(KernelError) as e:
        verify_kernel(Kernel("bad", (X, Y), body))
    assert fragment in str(e.value) and "statement `" in str(e.value)


def test_guarded_tail_is_not_flagged():
    X, Y = Buffer("X", (10,)), Buffer("Y", (10,), role="out")
    io, ii = Var("io"), Var("ii")
    idx = io * 4 + ii
    k = Kernel("tail", (X, Y), [loop(io, 3, body=[loop(ii, 4, body=[If(cmp("<", idx, 10), [Store(Y, (idx,), X[idx])])])])])
    verify_kernel(k)


def test_rewrites_substitute_and_map_loops():
    k = _matvec()
    outer = find_loop(k, "i")
    moved = substitute_stmt(outer.body[-1], {"i": Var("i") + 0})
    assert "y[i + 0] = acc" in str(moved)
    unrolled = map_loops(k.body, lambda l: l if l.var.name != "j" else l.__class__(l.var, l.start, l.stop, l.step, l.body, "unroll"))
    assert "unroll" in str(Kernel("m2", k.buffers, unrolled))
    assert [v.name for v in assigned_scalars(k.body)] == ["acc"]
    with pytest.raises(KernelError, match="no loop over 'q'"):
        find_loop(k, "q")
