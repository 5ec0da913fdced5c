"""The systolic array: vectorized and per-PE trace modes agree with numpy and with the analytic cycle formula."""
import numpy as np
import pytest

from infopt.accel import AccelConfig, AccelError, run_tile, tile_cycles


def _operands(rng, m, n, k, dtype):
    if dtype == "int8":
        a = rng.integers(-128, 128, (m, k), dtype=np.int8)
        b = rng.integers(-128, 128, (k, n), dtype=np.int8)
        return a, b, a.astype(np.int32) @ b.astype(np.int32)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    return a, b, a @ b


def _random_tile(rng, cfg):
    R, C = cfg.rows, cfg.cols
    n = int(rng.integers(1, C + 1))
    if cfg.dataflow == "ws":
        return int(rng.integers(1, 12)), n, int(rng.integers(1, R + 1))
    return int(rng.integers(1, R + 1)), n, int(rng.integers(1, 12))


@pytest.mark.parametrize("dataflow", ["ws", "os"])
@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_vector_and_trace_match_numpy_and_formula(dataflow, dtype):
    rng = np.random.default_rng()
    for _ in range(6):
        cfg = AccelConfig(int(rng.integers(1, 6)), int(rng.integers(1, 6)), dataflow, dtype)
        m, n, k = _random_tile(rng, cfg)
        a, b, ref = _operands(rng, m, n, k, dtype)
        vec = run_tile(a, b, cfg, "vector")
        tr = run_tile(a, b, cfg, "trace")
        assert vec.out.dtype == cfg.acc_dtype and vec.out.shape == (m, n)
        assert np.array_equal(vec.out, tr.out), f"modes differ for {cfg} m={m} n={n} k={k}"
        if dtype == "int8":
            assert np.array_equal(vec.out, ref)
        else:
            np.testing.assert_allclose(vec.out, ref, rtol=1e-5, atol=1e-5)
        assert vec.cycles == tr.cycles == tile_cycles(m, n, k, cfg)
        assert vec.macs == tr.trace.active.sum() == m * n * k
        assert tr.trace.shape == (m, n, k)


def test_int8_accumulates_in_int32_with_wraparound():
    cfg = AccelConfig(4, 4, "ws", "int8")
    a = np.full((3, 4), -128, dtype=np.int8)
    b = np.full((4, 2), -128, dtype=np.int8)
    out = run_tile(a, b, cfg).out
    assert out.dtype == np.int32 and np.all(out == 4 * 128 * 128)


def test_trace_schedule_of_one_pe():
    rng = np.random.default_rng()
    R, C, m = 3, 4, 5
    cfg = AccelConfig(R, C, "ws", "float32")
    a, b, _ = _operands(rng, m, C, R, "float32")
    tr = run_tile(a, b, cfg, "trace").trace
    i, j = int(rng.integers(R)), int(rng.integers(C))
    # (cycle, m, n, k): in ws, PE(i, j) holds B[i, j], so it adds A[mm, i] * B[i, j] into C[mm, j]
    assert tr.pe_schedule(i, j) == [(R + mm + i + j, mm, j, i) for mm in range(m)]
    cfg = AccelConfig(R, C, "os", "float32")
    a, b, _ = _operands(rng, R, C, 6, "float32")
    tr = run_tile(a, b, cfg, "trace").trace
    assert tr.pe_schedule(i, j) == [(s + i + j, i, j, s) for s in range(6)]
    assert 0 < tr.utilization() < 1 and tr.a.shape == (tr.cycles, R, C)


def test_bad_tiles_are_named():
    cfg = AccelConfig(4, 4, "ws", "int8")
    with pytest.raises(AccelError, match="k=5"):
        run_tile(np.zeros((2, 5), np.int8), np.zeros((5, 2), np.int8), cfg)
    with pytest.raises(AccelError, match="float32.*int8|dtype float32"):
        run_tile(np.zeros((2, 2), np.float32), np.zeros((2, 2), np.float32), cfg)
    with pytest.raises(AccelError, match="m=5"):
        run_tile(np.zeros((5, 2), np.int8), np.zeros((2, 2), np.int8), cfg.replace(dataflow="os"))
    with pytest.raises(AccelError, match="dataflow"):
        AccelConfig(dataflow="rs")
    with pytest.raises(AccelError, match="float16"):
        AccelConfig(dtype="float16")
    with pytest.raises(AccelError, match="mode"):
        run_tile(np.zeros((2, 2), np.int8), np.zeros((2, 2), np.int8), cfg, mode="fast")
