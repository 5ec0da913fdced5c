"""The command stream: driver tiling of any shape, executor, assembly round trip, cycle model, SRAM errors."""
import numpy as np
import pytest

from infopt.accel import (
    AccelConfig, AccelError, Accelerator, DmaLoad, DmaStore, MatMul, Program, compile_matmul, matmul, matmul_cycles,
    parse_asm, program_cycles,
)


def _data(rng, M, N, K, dtype):
    if dtype == "int8":
        A = rng.integers(-128, 128, (M, K), dtype=np.int8)
        B = rng.integers(-128, 128, (K, N), dtype=np.int8)
        bias = rng.integers(-5000, 5000, N).astype(np.int32)
        return A, B, bias, A.astype(np.int32) @ B.astype(np.int32) + bias
    A = rng.standard_normal((M, K)).astype(np.float32)
    B = rng.standard_normal((K, N)).astype(np.float32)
    bias = rng.standard_normal(N).astype(np.float32)
    return A, B, bias, A @ B + bias


@pytest.mark.parametrize("dataflow", ["ws", "os"])
@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_tiled_matmul_any_shape(dataflow, dtype):
    rng = np.random.default_rng()
    for _ in range(4):
        R, C = (int(x) for x in rng.integers(2, 7, 2))
        # small SRAMs so that the driver must split M and K as well
        cfg = AccelConfig(R, C, dataflow, dtype, in_sram_bytes=2048, wt_sram_bytes=256, out_sram_bytes=1024)
        M, N, K = (int(x) for x in rng.integers(1, 40, 3))
        A, B, bias, ref = _data(rng, M, N, K, dtype)
        use_bias, relu = bool(rng.integers(2)), bool(rng.integers(2))
        ref = ref if use_bias else ref - bias
        ref = np.maximum(ref, 0) if relu else ref
        C_, st = matmul(A, B, cfg, bias=bias if use_bias else None, relu=relu)
        if dtype == "int8":
            assert np.array_equal(C_, ref), f"{cfg} M={M} N={N} K={K}"
        else:
            np.testing.assert_allclose(C_, ref, rtol=1e-4, atol=1e-4)
        assert st.cycles == matmul_cycles(M, N, K, cfg, bias=use_bias)
        prog = compile_matmul(M, N, K, cfg, bias=use_bias, relu=relu)
        assert st.cycles == program_cycles(prog, cfg)
        assert st.macs == M * N * K and 0 < st.utilization <= st.compute_utilization <= 1


def test_trace_mode_runs_a_program_identically():
    rng = np.random.default_rng()
    cfg = AccelConfig(3, 4, "os", "float32")
    A, B, bias, _ = _data(rng, 7, 6, 9, "float32")
    c1, s1 = matmul(A, B, cfg, bias=bias)
    c2, s2 = matmul(A, B, cfg, bias=bias, mode="trace")
    assert np.array_equal(c1, c2) and s1.cycles == s2.cycles
    assert len(s2.traces) == compile_matmul(7, 6, 9, cfg, bias=True).count(MatMul)


def test_asm_round_trip_and_parse_errors():
    cfg = AccelConfig(4, 4, "ws", "float32")
    prog = compile_matmul(9, 6, 7, cfg, bias=True, relu=True)
    text = prog.asm()
    assert "MATMUL" in text and "relu" in text and "x9" in text
    mm = next(c for c in prog if isinstance(c, MatMul))
    assert f"m={mm.m} n={mm.n} k={mm.k}" in text and (mm.m, mm.n) == (9, 4)
    assert parse_asm(text).commands == prog.commands
    with pytest.raises(AccelError, match="line 2"):
        parse_asm("LOAD in[0x0] <- A[0:1, 0:1]\nJUMP 0")


def test_command_outside_sram_names_command_and_address():
    cfg = AccelConfig(4, 4, "ws", "float32", in_sram_bytes=256)
    A = np.ones((4, 4), np.float32)
    dram = {"A": A, "B": A.copy(), "C": np.zeros((4, 4), np.float32)}
    bad = Program([DmaLoad("in", 0x100 - 32, "A", (0, 4), (0, 4))])
    with pytest.raises(AccelError, match=r"command 0 \(LOAD.*address 0x100 is outside"):
        Accelerator(cfg).run(bad, dram)
    bad = Program([DmaLoad("in", 0, "A", (0, 4), (0, 4)), MatMul(0xC8, 0, 0, 4, 4, 4)])
    with pytest.raises(AccelError, match=r"command 1 \(MATMUL.*in SRAM"):
        Accelerator(cfg).run(bad, dram)
    with pytest.raises(AccelError, match="not a multiple"):
        Accelerator(cfg).run(Program([DmaStore(2, "C", (0, 1), (0, 1))]), dram)
    with pytest.raises(AccelError, match="outside the tensor"):
        Accelerator(cfg).run(Program([DmaLoad("in", 0, "A", (0, 5), (0, 4))]), dram)
    with pytest.raises(AccelError, match="no tensor 'X'"):
        Accelerator(cfg).run(Program([DmaStore(0, "X", (0, 1), (0, 1))]), dram)
    with pytest.raises(AccelError, match="int8"):
        matmul(A, A, AccelConfig(dtype="int8"))
    with pytest.raises(AccelError, match="cannot be tiled"):
        compile_matmul(4, 4, 10_000, AccelConfig(dtype="float32", in_sram_bytes=1024))
