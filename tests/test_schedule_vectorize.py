"""Explicit vectorization: vectorize(..., explicit=True) loops are emitted with LLVM vector types and stay correct."""
import numpy as np
import pytest

from infopt.codegen import Buffer, Kernel, KernelError, Store, Var, call, cmp, loop, maximum, select
from infopt.codegen.compiled import compile_kernel, compile_tuned
from infopt.codegen.vector_emit import emit_vector_llvm
from infopt.schedule import ScheduleError, reorder, vectorize

rng = np.random.default_rng()


def _ew(rows, n):
    x, b, y = Buffer("x", (rows, n)), Buffer("b", (n,)), Buffer("y", (rows, n), role="out")
    i, j = Var("i"), Var("j")
    v = maximum(x[i, j] * 2.0 + b[j], 0.0) + call("sqrt", call("abs", x[i, j]))
    v = v + select(cmp(">", x[i, j], b[j]), x[i, j], b[j] * 0.5) + x[i, 0]  # x[i, 0] is invariant: a splat
    return Kernel("ew", (x, b, y), (loop("i", rows, body=loop("j", n, body=Store(y, (i, j), v))),))


def _ref(xa, ba):
    return (np.maximum(xa * 2 + ba, 0) + np.sqrt(np.abs(xa)) + np.where(xa > ba, xa, ba * 0.5) + xa[:, :1])


@pytest.mark.parametrize("width", [4, 8, 16])
def test_explicit_vector_loop_matches_numpy_with_remainder(width):
    rows, n = int(rng.integers(1, 6)), int(rng.integers(1, 70))
    k = vectorize(_ew(rows, n), "j", width=width, explicit=True)
    text = emit_vector_llvm(k)
    assert f"<{width} x float>" in text
    xa = rng.standard_normal((rows, n), dtype=np.float32)
    ba = rng.standard_normal(n, dtype=np.float32)
    (ya,) = compile_tuned(k, loop_vectorize=False).run(xa, ba)
    np.testing.assert_allclose(ya, _ref(xa, ba), rtol=1e-5, atol=1e-5)
    # the ordinary backend ignores the explicit flag (it only sees vectorize metadata) and agrees
    (yb,) = compile_kernel(k).run(xa, ba)
    np.testing.assert_allclose(yb, ya, rtol=1e-6, atol=1e-6)


def test_explicit_vectorize_refuses_reductions_and_strided_access():
    M, N, K = 5, 6, 7
    A, B, C = Buffer("A", (M, K)), Buffer("B", (K, N)), Buffer("C", (M, N), role="out")
    i, j, k = Var("i"), Var("j"), Var("k")
    mm = Kernel("mm", (A, B, C), (loop("i", M, body=loop("j", N, body=loop("k", K, body=Store(
        C, (i, j), C[i, j] + A[i, k] * B[k, j])))),), fastmath=True)
    with pytest.raises(ScheduleError, match="elementwise"):
        vectorize(mm, "k", width=8, explicit=True)
    with pytest.raises(ScheduleError, match="width"):
        vectorize(reorder(mm, ["i", "k", "j"]), "j", explicit=True)
    # i-j-k with j innermost reads A[i, k] (invariant) and B[k, j] (contiguous): fine; make B strided instead
    x, y = Buffer("x", (8, 8)), Buffer("y", (8, 8), role="out")
    tr = Kernel("transpose", (x, y), (loop("i", 8, body=loop("j", 8, body=Store(y, (i, j), x[j, i]))),))
    with pytest.raises(KernelError, match="not contiguous"):
        emit_vector_llvm(vectorize(tr, "j", width=4, explicit=True))
