"""Bounds-checked kernels: verify_kernel proves accesses in bounds from the loop bounds, rejects the ones it can show
out of bounds with the loop values, and the backend checks the few it cannot decide instead of corrupting memory."""
import numpy as np
import pytest

import infopt.codegen.index_bounds as index_bounds
from infopt.codegen import (
    Assign, Buffer, If, Kernel, KernelError, OutOfBoundsError, Store, Var, cmp, loop, maximum, minimum, prove_bounds,
    verify_kernel,
)
from infopt.codegen.compiled import compile_kernel
from infopt.codegen.emit import emit_llvm
from infopt.codegen.lower_elementwise import softmax_kernel
from infopt.codegen.lower_linalg import conv_kernel, matmul_kernel
from infopt.ir import TensorType
from infopt.schedule import compute_at, pack, parallel, reorder, split, tile, vectorize
from infopt.schedule.address_trace import trace_kernel
from infopt.schedule.chains import OPS, elementwise_chain, fused_chain
from infopt.schedule.matmul_ladder import RegisterShape, packed, packed_mt, tiled, tiled_order

rng = np.random.default_rng()


def _student_tiled(M, N, K, ti, tj, col_limit=None, tail_min=True):
    """A tiled matmul the way unit 06's exercise asks for it, with the two classic mistakes switchable."""
    A, B, C = Buffer("A", (M, K)), Buffer("B", (K, N)), Buffer("C", (M, N), role="out")
    io, jo, ii, ji, k = (Var(v) for v in ("io", "jo", "ii", "ji", "k"))
    istop = minimum(io + ti, M) if tail_min else io + ti
    jstop = (minimum(jo + tj, N if col_limit is None else col_limit)) if tail_min else jo + tj
    inner = loop("ii", io, istop, body=loop("ji", jo, jstop, body=[
        Store(C, (ii, ji), 0.0), loop("k", K, body=Store(C, (ii, ji), C[ii, ji] + A[ii, k] * B[k, ji]))]))
    return Kernel("student_mm", (A, B, C), (loop("io", 0, M, step=ti, body=loop("jo", 0, N, step=tj, body=inner)),))


def _assert_proven(k):
    r = prove_bounds(k)
    assert not r.violations and not r.unproven, f"{k.name}: {r.violations[:1]} {list(r.unproven)[:1]}"
    assert r.proven > 0
    return r


def test_the_row_count_as_column_limit_is_out_of_bounds_at_named_loop_values():
    M, N, K, ti, tj = 10, 7, 3, 4, 3
    with pytest.raises(OutOfBoundsError) as e:
        verify_kernel(_student_tiled(M, N, K, ti, tj, col_limit=M))
    msg = str(e.value)
    assert "statement `C[ii, ji] = 0.0`" in msg
    assert "out of bounds: buffer C, index [ii, ji] = [0, 7], shape (10, 7), at loop values io=0, jo=6, ii=0, ji=7" in msg
    assert e.value.buffer == "C" and e.value.index == (0, 7) and e.value.loop_values == {"io": 0, "jo": 6, "ii": 0, "ji": 7}
    # with fewer rows than columns the same mistake stays in bounds (and gives wrong values, which tests catch)
    _assert_proven(_student_tiled(5, 8, 3, 2, 3, col_limit=5))


def test_a_tail_tile_without_min_is_out_of_bounds():
    with pytest.raises(OutOfBoundsError, match=r"out of bounds: buffer C, index \[ii, ji\] = \[\d+, \d+\], shape \(10, 7\)"):
        verify_kernel(_student_tiled(10, 7, 3, 4, 3, tail_min=False))
    _assert_proven(_student_tiled(8, 6, 3, 4, 3, tail_min=False))  # exact multiples need no min
    _assert_proven(_student_tiled(*(int(v) for v in rng.integers(1, 30, 3)), int(rng.integers(1, 9)),
                                  int(rng.integers(1, 9))))


def test_random_odd_tilings_are_proven_and_a_one_off_bound_is_caught():
    for _ in range(20):
        M, N, K = (int(v) for v in rng.integers(1, 40, 3))
        ti, tj = (int(v) for v in rng.integers(1, 12, 2))
        _assert_proven(_student_tiled(M, N, K, ti, tj))
        if M % ti:
            with pytest.raises(OutOfBoundsError, match="buffer C"):
                verify_kernel(_student_tiled(M, N, K, ti, tj, tail_min=False))


def test_guards_bound_what_they_test():
    X, Y = Buffer("X", (10,)), Buffer("Y", (10,), role="out")
    io, ii = Var("io"), Var("ii")
    idx = io * 4 + ii
    guarded = Kernel("tail", (X, Y), [loop(io, 3, body=[loop(ii, 4, body=[If(cmp("<", idx, 10), [Store(Y, (idx,), X[idx])])])])])
    _assert_proven(guarded)
    unguarded = Kernel("tail", (X, Y), [loop(io, 3, body=[loop(ii, 4, body=[Store(Y, (idx,), X[idx])])])])
    with pytest.raises(OutOfBoundsError, match=r"index \[io \* 4 \+ ii\] = \[10\], shape \(10,\), at loop values io=2, ii=2"):
        verify_kernel(unguarded)
    # the else-branch knows the negation
    other = Kernel("tail", (X, Y), [loop(io, 3, body=[loop(ii, 4, body=[
        If(cmp(">=", idx, 10), [Store(Y, (0,), 0.0)], [Store(Y, (idx,), X[idx])])])])])
    _assert_proven(other)


def test_non_affine_but_bounded_indices_are_proven():
    X, Y = Buffer("X", (8,)), Buffer("Y", (8,), role="out")
    i = Var("i")
    _assert_proven(Kernel("mod", (X, Y), (loop(i, 8, body=Store(Y, (i,), X[(i * 3 + 1) % 8])),)))
    _assert_proven(Kernel("div", (X, Y), (loop(i, 8, body=Store(Y, ((i * 7) // 8,), X[i])),)))
    with pytest.raises(OutOfBoundsError, match=r"index \[i // 2 \+ 5\] = \[8\]"):
        verify_kernel(Kernel("div", (X, Y), (loop(i, 8, body=Store(Y, (i // 2 + 5,), X[i])),)))


def test_what_the_symbolic_bound_misses_the_search_settles():
    X, Y = Buffer("X", (4,)), Buffer("Y", (8,), role="out")
    i = Var("i")
    tent = Kernel("tent", (X, Y), (loop(i, 8, body=Store(Y, (i,), X[minimum(i, 7 - i)])),))  # at most 3, bounded as 7
    _assert_proven(tent)
    tent5 = Kernel("tent", (Buffer("X", (3,)), Y), (loop(i, 8, body=Store(Y, (i,), Buffer("X", (3,))[minimum(i, 7 - i)])),))
    with pytest.raises(OutOfBoundsError, match=r"= \[3\], shape \(3,\), at loop values i=3"):
        verify_kernel(tent5)


def test_an_undecidable_access_runs_checked_and_stops_before_touching_memory():
    X, I, Y = Buffer("X", (8,)), Buffer("I", (6,), "i64"), Buffer("Y", (6,), role="out")
    i = Var("i")
    gather = Kernel("gather", (X, I, Y), (loop(i, 6, body=Store(Y, (i,), X[I[i]] * 2.0)),))
    report = prove_bounds(gather)
    assert [s.buffer.name for s in report.checked_sites] == ["X"] and report.proven == 2
    ck = compile_kernel(gather)
    assert ck.checked and "%\"oob\"" in ck.ir
    x = np.arange(8, dtype=np.float32)
    y = np.full(6, -1.0, np.float32)
    ck(x, np.array([7, 0, 3, 1, 2, 5]), y)
    np.testing.assert_array_equal(y, 2 * np.array([7, 0, 3, 1, 2, 5], np.float32))
    y[:] = -1.0
    with pytest.raises(OutOfBoundsError) as e:
        ck(x, np.array([1, 2, 99, 3, 4, 5]), y)
    assert "out of bounds: buffer X, index [I[i]] = [99], shape (8,), at loop values i=2" in str(e.value)
    assert "bounds check" in str(e.value)
    np.testing.assert_array_equal(y, [2.0, 4.0, -1.0, -1.0, -1.0, -1.0])  # stopped at the bad access
    with pytest.raises(OutOfBoundsError, match=r"= \[-1\]"):
        ck(x, np.array([0, 0, 0, 0, 0, -1]), y)


def test_a_checked_parallel_kernel_reports_from_any_thread():
    X, I, Y = Buffer("X", (16,)), Buffer("I", (16,), "i64"), Buffer("Y", (16,), role="out")
    i = Var("i")
    k = Kernel("pgather", (X, I, Y), (loop(i, 16, body=Store(Y, (i,), X[I[i]]), kind="parallel"),))
    ck = compile_kernel(k)
    assert ck.checked and ck.par is not None
    idx = np.arange(16)[::-1].copy()
    y = np.empty(16, np.float32)
    ck(np.arange(16, dtype=np.float32), idx, y, threads=2)
    np.testing.assert_array_equal(y, idx.astype(np.float32))
    idx[12] = 16
    with pytest.raises(OutOfBoundsError, match="at loop values i=12"):
        ck(np.arange(16, dtype=np.float32), idx, y, threads=2)


def test_a_search_that_cannot_finish_leaves_the_access_checked(monkeypatch):
    X, Y = Buffer("X", (4,)), Buffer("Y", (64,), role="out")
    i = Var("i")
    tent = Kernel("tent64", (X, Y), (loop(i, 8, body=Store(Y, (i,), X[minimum(i, 7 - i)])),))
    monkeypatch.setattr(index_bounds, "SEARCH_LIMIT", 3)
    assert len(prove_bounds(tent).unproven) == 1
    ck = compile_kernel(tent)
    assert ck.checked
    (y,) = ck.run(np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal(y[:8], [0, 1, 2, 3, 3, 2, 1, 0])
    assert len(trace_kernel(tent)) == 16
    X3 = Buffer("X", (3,))
    over = Kernel("tent3", (X3, Y), (loop(i, 8, body=Store(Y, (i,), X3[minimum(i, 7 - i)])),))
    assert len(prove_bounds(over).unproven) == 1 and not prove_bounds(over).violations
    with pytest.raises(OutOfBoundsError, match=r"buffer X, index \[min\(i, 7 - i\)\] = \[3\], shape \(3,\), at loop values i=3"):
        compile_kernel(over).run(np.arange(3, dtype=np.float32))
    with pytest.raises(OutOfBoundsError, match=r"= \[3\], shape \(3,\), at loop values i=3"):
        trace_kernel(over)  # the address trace checks it as it goes, like the compiled kernel


def test_proven_kernels_compile_exactly_as_before_with_no_checks():
    k = _student_tiled(10, 7, 3, 4, 3)
    ir = emit_llvm(k)
    assert "oob" not in ir and "inbounds." not in ir
    assert not compile_kernel(k).checked


def _library_kernels():
    M, N, K = (int(v) | 1 for v in rng.integers(5, 60, 3))
    yield "tiled", tiled(M, N, K)
    for order in ("ijk", "jki", "kij"):
        yield f"tiled_order_{order}", tiled_order(M, N, K, (8, 16, 8), order)
    for rs in (RegisterShape(6, 16, 256), RegisterShape(4, 8, 128), RegisterShape(8, 32, 512)):
        yield f"packed_{rs.mr}x{rs.nr}", packed(M, N, K, shape=rs)
        yield f"packed_exact_{rs.mr}x{rs.nr}", packed(rs.mr * 5, rs.nr * 3, K, shape=rs)
        yield f"packed_small_blocks_{rs.mr}", packed(M, N, K, shape=rs, kc=16, mc=2 * rs.mr, nc=2 * rs.nr)
    yield "packed_mt", packed_mt(M, N, K, threads=3)
    yield "softmax", softmax_kernel("sm", (M, N))
    yield "softmax_axis0", softmax_kernel("sm0", (M, 3, N), axis=0)
    yield "matmul_batched", matmul_kernel("mm", TensorType((2, 1, M, K)), TensorType((3, K, N)), TensorType((2, 3, M, N)))
    yield "gemm", matmul_kernel("gemm", TensorType((K, M)), TensorType((N, K)), TensorType((M, N)), True, True, 0.5,
                                TensorType((N,)), 2.0)
    for (s, d, p, g) in [((1, 1), (1, 1), (0, 0), 1), ((2, 1), (1, 1), (1, 1), 1), ((1, 2), (2, 2), (2, 1), 2)]:
        x, w = TensorType((2, 4, 9, 8)), TensorType((6, 4 // g, 3, 3))
        ho = (9 + 2 * p[0] - d[0] * 2 - 1) // s[0] + 1
        wo = (8 + 2 * p[1] - d[1] * 2 - 1) // s[1] + 1
        yield f"conv_{s}_{d}_{p}_{g}", conv_kernel("conv", x, w, TensorType((2, 6, ho, wo)), TensorType((6,)), s, d, p, g)
    chain = elementwise_chain(M * N, sorted(OPS))
    yield "chain", chain
    yield "chain_fused", fused_chain(chain)
    A, B, bias, C = Buffer("A", (M, K)), Buffer("B", (K, N)), Buffer("bias", (N,)), Buffer("C", (M, N), role="out")
    i, j, k, p, q = (Var(v) for v in "ijkpq")
    prod = loop("i", M, body=loop("j", N, body=[Store(C, (i, j), 0.0),
                                                 loop("k", K, body=Store(C, (i, j), C[i, j] + A[i, k] * B[k, j]))]))
    epi = loop("p", M, body=loop("q", N, body=Store(C, (p, q), maximum(C[p, q] + bias[q], 0.0))))
    yield "compute_at", compute_at(Kernel("mbr", (A, B, bias, C), (prod, epi)), "p", "j")
    nest = Kernel("nest", (A, B, C), (loop("i", M, body=loop("j", N, body=loop("k", K, body=Store(
        C, (i, j), C[i, j] + A[i, k] * B[k, j])))),))
    yield "tile_pack", pack(tile(nest, "i", "j", 8, 8), "B", "jo")
    yield "tile_pack_transposed", pack(tile(nest, "i", "j", 8, 8), "A", "jo", order=(1, 0))
    yield "parallel_split", parallel(split(reorder(nest, ["i", "k", "j"]), "j", 7), "i")
    x, y = Buffer("x", (M,)), Buffer("y", (M,), role="out")
    yield "explicit_vector", vectorize(Kernel("v", (x, y), (loop("i", M, body=Store(y, (i,), x[i] * 2.0)),)), "i",
                                       width=8, explicit=True)
    acc = Var("acc", "f32")
    yield "scalar_reduce", Kernel("rs", (A, Buffer("r", (M,), role="out")), (loop("i", M, body=[
        Assign(acc, 0.0), loop("k", K, body=Assign(acc, acc + A[i, k])), Store(Buffer("r", (M,), role="out"), (i,), acc)]),))


@pytest.mark.parametrize("name, kernel", list(_library_kernels()))
def test_every_kernel_the_library_builds_is_proven_in_bounds(name, kernel):
    verify_kernel(kernel)
    _assert_proven(kernel)


def test_violations_reach_compile_kernel_and_the_trace():
    bad = _student_tiled(10, 7, 3, 4, 3, col_limit=10)
    for fn in (compile_kernel, trace_kernel, emit_llvm):
        with pytest.raises(OutOfBoundsError, match="buffer C"):
            fn(bad)
    assert issubclass(OutOfBoundsError, KernelError)
