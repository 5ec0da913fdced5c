"""Schedule primitives: each transformed kernel still matches numpy on odd sizes; illegal requests raise ScheduleError."""
import numpy as np
import pytest

from infopt.codegen import Buffer, Kernel, Store, Var, loop, maximum
from infopt.codegen.compiled import compile_kernel
from infopt.schedule import (
    Schedule, ScheduleError, compute_at, fuse, pack, parallel, reorder, split, tile, unroll, vectorize,
)

rng = np.random.default_rng()


def _odd(lo=5, hi=40):
    return [int(v) | 1 for v in rng.integers(lo, hi, 3)]


def _mm_nest(M, N, K, fastmath=False):
    """The pure i-j-k accumulation nest (C zeroed by the caller's run(), which allocates zeros)."""
    A, B, C = Buffer("A", (M, K)), Buffer("B", (K, N)), Buffer("C", (M, N), role="out")
    i, j, k = Var("i"), Var("j"), Var("k")
    nest = loop("i", M, body=loop("j", N, body=loop("k", K, body=Store(C, (i, j), C[i, j] + A[i, k] * B[k, j]))))
    return Kernel("mmnest", (A, B, C), (nest,), fastmath=fastmath)


def _run_mm(kernel, M, N, K):
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    ck = compile_kernel(kernel)
    assert not ck.checked, "scheduled kernels are proven in bounds (no run-time checks)"
    (c,) = ck.run(a, b)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_split_keeps_results_and_names_loops():
    M, N, K = _odd()
    k = split(_mm_nest(M, N, K), "i", 4)
    assert [s for s in str(k).split() if s in ("io", "ii")]
    _run_mm(k, M, N, K)


def test_split_divisible_gives_constant_inner_extent_that_unrolls():
    k = split(_mm_nest(16, 9, 7), "i", 4)
    k = unroll(k, "ii")
    assert "unroll" in str(k)
    _run_mm(k, 16, 9, 7)


def test_unroll_needs_constant_bounds():
    k = split(_mm_nest(15, 9, 7), "i", 4)  # 15 % 4 != 0: min() tail bound
    with pytest.raises(ScheduleError, match="not constant"):
        unroll(k, "ii")


@pytest.mark.parametrize("order", [["i", "k", "j"], ["k", "i", "j"], ["j", "k", "i"]])
def test_reorder_matmul_any_order(order):
    M, N, K = _odd()
    _run_mm(reorder(_mm_nest(M, N, K), order), M, N, K)


def test_tile_on_odd_sizes_matches():
    M, N, K = _odd(20, 70)
    ti, tj = (int(v) for v in rng.integers(2, 17, 2))
    _run_mm(tile(_mm_nest(M, N, K), "i", "j", ti, tj), M, N, K)


def test_reorder_rejects_bound_dependence():
    k = split(_mm_nest(15, 9, 7), "i", 4)
    with pytest.raises(ScheduleError, match="depend on loop io"):
        reorder(k, ["ii", "io"])


def test_reorder_rejects_reduction_swap_without_fastmath():
    M, N, K = 9, 7, 32  # divisible: ki runs 0..8, so only the reduction order is at stake
    k = split(_mm_nest(M, N, K), "k", 8)
    with pytest.raises(ScheduleError, match="reduction"):
        reorder(k, ["ki", "ko"])
    # with fastmath the same swap is allowed (a reassociated sum)
    k2 = split(_mm_nest(M, N, K, fastmath=True), "k", 8)
    _run_mm(reorder(k2, ["ki", "ko"]), M, N, K)


def test_reorder_rejects_loop_carried_dependence():
    n = 12
    X = Buffer("X", (n, n), role="inout")
    i, j = Var("i"), Var("j")
    body = loop("i", 1, n, body=loop("j", n, body=Store(X, (i, j), X[i - 1, j] + 1.0)))
    k = Kernel("prefix", (X,), (body,))
    with pytest.raises(ScheduleError, match="X"):
        reorder(k, ["j", "i"])


def test_reorder_requires_perfect_nest():
    with pytest.raises(ScheduleError, match="not perfectly nested"):
        reorder(_mm_bias_relu(5, 6, 7), ["i", "k", "j"])  # C = 0 sits between j and k


def test_vectorize_checks_reduction_and_runs():
    M, N, K = _odd()
    k = vectorize(reorder(_mm_nest(M, N, K), ["i", "k", "j"]), "j", width=8)
    _run_mm(k, M, N, K)
    with pytest.raises(ScheduleError, match="fastmath"):
        vectorize(_mm_nest(M, N, K), "k")
    with pytest.raises(ScheduleError, match="innermost"):
        vectorize(_mm_nest(M, N, K), "j")


def test_parallel_rows_across_threads():
    M, N, K = _odd()
    k = parallel(_mm_nest(M, N, K), "i")
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    (c,) = compile_kernel(k).run(a, b, threads=2)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_parallel_rejects_reduction_loop_and_non_top_level():
    M, N, K = 6, 5, 4
    with pytest.raises(ScheduleError, match="only top-level"):
        parallel(_mm_nest(M, N, K), "j")
    k = reorder(_mm_nest(M, N, K), ["k", "i", "j"])
    with pytest.raises(ScheduleError, match="same elements"):
        parallel(k, "k")


def _two_elementwise(n, shift=0):
    X, T, Y = Buffer("X", (n,)), Buffer("T", (n,), role="out"), Buffer("Y", (n,), role="out")
    i, j = Var("i"), Var("j")
    first = loop("i", n, body=Store(T, (i,), X[i] * 2.0))
    src = T[j] if shift == 0 else T[maximum(j - shift, 0)]
    second = loop("j", n, body=Store(Y, (j,), src + 1.0))
    return Kernel("chain", (X, T, Y), (first, second))


def test_fuse_elementwise_chain():
    n = int(rng.integers(5, 100))
    k = fuse(_two_elementwise(n), "i", "j")
    assert len(k.body) == 1
    x = rng.standard_normal(n, dtype=np.float32)
    t, y = compile_kernel(k).run(x)
    np.testing.assert_allclose(y, x * 2 + 1, rtol=1e-6)


def test_fuse_rejects_shifted_read_and_mismatched_ranges():
    with pytest.raises(ScheduleError, match="buffer T"):
        fuse(_two_elementwise(20, shift=1), "i", "j")
    X, Y = Buffer("X", (8,)), Buffer("Y", (8,), role="out")
    i, j = Var("i"), Var("j")
    k = Kernel("m", (X, Y), (loop("i", 8, body=Store(Y, (i,), X[i])), loop("j", 4, body=Store(Y, (j,), Y[j] + 1.0))))
    with pytest.raises(ScheduleError, match="different ranges"):
        fuse(k, "i", "j")


def test_pack_tile_of_b_matches_and_adds_temp():
    M, N, K = _odd(20, 50)
    k = pack(tile(_mm_nest(M, N, K), "i", "j", 8, 8), "B", "jo")
    assert any(b.role == "temp" for b in k.buffers)
    _run_mm(k, M, N, K)
    k2 = pack(tile(_mm_nest(M, N, K), "i", "j", 8, 8), "A", "jo", order=(1, 0))
    _run_mm(k2, M, N, K)


def test_pack_rejects_written_buffer():
    with pytest.raises(ScheduleError, match="written"):
        pack(_mm_nest(5, 6, 7), "C", "i")


def _mm_bias_relu(M, N, K):
    A, B, bias, C = Buffer("A", (M, K)), Buffer("B", (K, N)), Buffer("bias", (N,)), Buffer("C", (M, N), role="out")
    i, j, k, p, q = (Var(v) for v in "ijkpq")
    prod = loop("i", M, body=loop("j", N, body=[Store(C, (i, j), 0.0),
                                                 loop("k", K, body=Store(C, (i, j), C[i, j] + A[i, k] * B[k, j]))]))
    epi = loop("p", M, body=loop("q", N, body=Store(C, (p, q), maximum(C[p, q] + bias[q], 0.0))))
    return Kernel("mm_bias_relu", (A, B, bias, C), (prod, epi))


def test_compute_at_places_epilogue_in_tile():
    M, N, K = _odd()
    k = compute_at(_mm_bias_relu(M, N, K), "p", "j")
    assert len(k.body) == 1
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    bias = rng.standard_normal(N, dtype=np.float32)
    (c,) = compile_kernel(k).run(a, b, bias)
    np.testing.assert_allclose(c, np.maximum(a @ b + bias, 0), rtol=1e-4, atol=1e-4)


def test_compute_at_rejects_inside_reduction():
    with pytest.raises(ScheduleError, match="not final"):
        compute_at(_mm_bias_relu(5, 6, 7), "p", "k")


def test_schedule_chain_records_steps():
    M, N, K = _odd()
    s = Schedule(_mm_nest(M, N, K)).reorder(["i", "k", "j"]).split("j", 8).vectorize("ji")
    assert len(s.steps) == 3 and "reorder" in s.steps[0]
    _run_mm(s.kernel, M, N, K)


def test_contract_keeps_fused_intermediate_in_a_register():
    from infopt.schedule.chains import elementwise_chain, fused_chain

    n = int(rng.integers(5, 200))
    k = elementwise_chain(n, ["bias", "relu", "square"])
    f = fused_chain(k)
    assert not any(b.role == "temp" for b in f.buffers) and len(f.body) == 1
    x, p = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    (y,) = compile_kernel(f).run(x, p)
    np.testing.assert_allclose(y, np.maximum(x + p, 0) ** 2, rtol=1e-5, atol=1e-6)


def test_contract_rejects_unfused_or_visible_buffers():
    from infopt.schedule import contract
    from infopt.schedule.chains import elementwise_chain

    k = elementwise_chain(10, ["relu", "square"])
    with pytest.raises(ScheduleError, match="fuse them"):
        contract(k, "t0")
    with pytest.raises(ScheduleError, match="temp"):
        contract(k, "y")


def test_fuse_rejects_reduction_then_use_like_softmax():
    n = 16
    X, MX, Y = Buffer("X", (n,)), Buffer("MX", (1,), role="out"), Buffer("Y", (n,), role="out")
    i, j = Var("i"), Var("j")
    k = Kernel("smax_part", (X, MX, Y), (loop("i", n, body=Store(MX, (0,), maximum(MX[0], X[i]))),
                                         loop("j", n, body=Store(Y, (j,), X[j] - MX[0]))))
    with pytest.raises(ScheduleError, match="finished reduction"):
        fuse(k, "i", "j")


def test_tile_after_interchange_keeps_k_between():
    M, N, K = _odd()
    k = tile(reorder(_mm_nest(M, N, K), ["i", "k", "j"]), "i", "j", 4, 8)
    assert [ln.split()[1] for ln in str(k).splitlines() if ln.strip().startswith("for")] == ["io", "jo", "ii", "k", "ji"]
    _run_mm(k, M, N, K)


def test_random_schedule_sequences_preserve_the_result():
    """Property: any sequence of splits and legal reorders of the matmul nest computes the same C."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    @settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.tuples(st.integers(1, 23), st.integers(1, 23), st.integers(1, 23)),
           st.lists(st.tuples(st.sampled_from("ijk"), st.integers(1, 9)), max_size=3),
           st.permutations(["i", "j", "k"]))
    def prop(shape, splits, order):
        M, N, K = shape
        k = reorder(_mm_nest(M, N, K), order)
        done = set()
        for var, f in splits:
            if var in done:
                continue
            k = split(k, var, f)
            done.add(var)
        _run_mm(k, M, N, K)

    prop()
