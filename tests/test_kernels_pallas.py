"""The Pallas kernels (infopt.kernels.pallas) in interpret mode: equal to float64 numpy references and to the
Triton launchers on odd sizes (ragged last blocks), clear errors on bad input, no jax until called, nothing on
stderr, and the (concept, Triton, Pallas) rows of the lesson."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("jax")

from infopt.kernels.pallas import matmul_pallas, side_by_side, side_by_side_table, softmax_pallas  # noqa: E402

RNG = np.random.default_rng(10)


def softmax64(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_softmax_pallas_matches_numpy_on_ragged_blocks():
    x = (RNG.standard_normal((13, 37)) * 4).astype(np.float32)
    for block_rows in (1, 4, 16):                   # 13 rows: the last block of 4 has 1 real row, 16 > 13
        got = softmax_pallas(x, block_rows)
        assert got.shape == x.shape and got.dtype == np.float32
        np.testing.assert_allclose(got, softmax64(x), rtol=1e-5, atol=1e-6)
    big = np.array([[1000.0, 0.0, -1000.0]], dtype=np.float32)   # no overflow: the max is subtracted
    np.testing.assert_allclose(softmax_pallas(big, 1), softmax64(big), atol=1e-7)


def test_matmul_pallas_matches_numpy_with_ragged_k():
    a = RNG.standard_normal((37, 29))
    b = RNG.standard_normal((29, 19))
    got = matmul_pallas(a, b, block=(16, 8, 8))     # K = 29: the last K block holds 5 real columns
    assert got.shape == (37, 19) and got.dtype == np.float32
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)


def test_bad_input_is_refused_clearly():
    with pytest.raises(ValueError, match="2-D"):
        softmax_pallas(np.zeros(5, np.float32), 2)
    with pytest.raises(TypeError, match="floats"):
        softmax_pallas(np.zeros((2, 2), np.int32), 2)
    with pytest.raises(ValueError, match="block_rows must be a positive int"):
        softmax_pallas(np.zeros((2, 2), np.float32), 0)
    with pytest.raises(ValueError, match="inner sizes differ"):
        matmul_pallas(np.zeros((4, 3)), np.zeros((4, 3)))
    with pytest.raises(ValueError, match=r"block must be \(bm, bn, bk\)"):
        matmul_pallas(np.zeros((4, 3)), np.zeros((3, 4)), block=(8, 8))


def test_equal_to_the_triton_kernels():
    torch = pytest.importorskip("torch")
    try:
        from infopt.kernels.matmul import matmul
        from infopt.kernels.softmax import softmax
    except ImportError as e:
        pytest.skip(f"the Triton launchers infopt.kernels.softmax/matmul are not importable yet: {e}")
    x = (RNG.standard_normal((6, 37)) * 3).astype(np.float32)
    np.testing.assert_allclose(softmax_pallas(torch.from_numpy(x), 4), softmax(torch.from_numpy(x)).numpy(),
                               rtol=1e-5, atol=1e-6)
    a = RNG.standard_normal((20, 29)).astype(np.float32)
    b = RNG.standard_normal((29, 19)).astype(np.float32)
    want = matmul(torch.from_numpy(a), torch.from_numpy(b), block=(16, 16, 16)).numpy()
    np.testing.assert_allclose(matmul_pallas(a, b, block=(16, 16, 16)), want, rtol=1e-4, atol=1e-4)


def test_side_by_side_rows_for_the_lesson():
    rows = side_by_side()
    assert len(rows) >= 6 and all(len(r) == 3 and all(isinstance(s, str) and s for s in r) for r in rows)
    joined = " ".join(t + " " + p for _, t, p in rows)
    for word in ("tl.program_id", "pl.program_id", "BlockSpec", "tl.load", "mask", "x_ref[...]", "interpret=True"):
        assert word in joined
    table = side_by_side_table()
    assert table.startswith("| concept | Triton | Pallas |") and table.count("\n") == len(rows) + 1


def test_import_is_jax_free_and_a_run_prints_nothing_to_stderr():
    code = textwrap.dedent("""
        import sys
        import numpy as np
        import infopt.kernels.pallas as p
        assert "jax" not in sys.modules, "importing infopt.kernels.pallas imported jax"
        y = p.softmax_pallas(np.ones((3, 5), np.float32), 2)
        import jax
        assert not jax.config.jax_enable_x64 and jax.default_backend() == "cpu"
        print("ok", round(float(y.sum()), 4))
    """)
    env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ok", "3.0"]
    assert out.stderr == "", f"jax wrote to stderr: {out.stderr}"
