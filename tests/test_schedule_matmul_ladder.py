"""The matmul ladder: every rung matches numpy on random sizes that are not multiples of any tile."""
import numpy as np
import pytest

from infopt.codegen.analysis import count_fmas, vectorization
from infopt.codegen.compiled import compile_tuned
from infopt.schedule.matmul_ladder import RUNGS, RegisterShape, host_register_shape, matmul_rung, packed

rng = np.random.default_rng()


def _sizes():
    # odd sizes, none a multiple of 6, 8, 16 or 32, with K large enough to cross a kc=256 block sometimes
    M, N = (int(v) for v in rng.integers(10, 90, 2))
    K = int(rng.integers(5, 300))
    return M | 1, N | 1, K | 1


@pytest.mark.parametrize("name", RUNGS)
def test_rung_matches_numpy_on_odd_sizes(name):
    M, N, K = _sizes()
    r = matmul_rung(name, M, N, K, threads=2)
    assert not r.compiled.checked, f"{name}: every access is proven in bounds (no run-time checks)"
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    np.testing.assert_allclose(r(a, b), a @ b, rtol=2e-4, atol=2e-4 * np.sqrt(K))


def test_packed_small_blocks_cross_every_loop_edge():
    M, N, K = 23, 41, 37
    k = packed(M, N, K, shape=RegisterShape(4, 8, 256), kc=16, mc=8, nc=16)
    ck = compile_tuned(k, bits=256, loop_vectorize=False)
    assert not ck.checked
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    (c,) = ck.run(a, b)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_packed_micro_kernel_uses_vector_fmas():
    rs = host_register_shape()
    ck = compile_tuned(packed(64, 64, 64), loop_vectorize=False)
    v = vectorization(ck.optimized_ir)
    assert v["vectorized"] and v["max_width"] >= min(rs.lanes, 8), v
    assert count_fmas(ck.optimized_ir) >= rs.mr * rs.nr, count_fmas(ck.optimized_ir)


def test_unknown_rung_and_bad_sizes():
    with pytest.raises(ValueError, match="unknown matmul schedule"):
        matmul_rung("blocked", 4, 4, 4)
    with pytest.raises(ValueError, match="positive"):
        matmul_rung("naive", 0, 4, 4)


@pytest.mark.parametrize("rs", [RegisterShape(6, 16, 256), RegisterShape(8, 32, 512), RegisterShape(4, 8, 128)])
def test_packed_every_register_shape_is_correct(rs):
    M, N, K = _sizes()
    ck = compile_tuned(packed(M, N, K, shape=rs), bits=rs.bits, loop_vectorize=False)
    assert not ck.checked
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    (c,) = ck.run(a, b)
    np.testing.assert_allclose(c, a @ b, rtol=2e-4, atol=2e-4 * np.sqrt(K))
