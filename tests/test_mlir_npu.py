"""infopt.mlir.npu: the npu dialect's verifiers, the linalg.matmul -> npu lowering run on unit 07's simulator (exact
results on sizes that are not multiples of the tile, cycles equal to the analytic formula), and the IR's round trip."""
import numpy as np
import pytest
from xdsl.dialects.builtin import Float32Type, i8, i32
from xdsl.utils.exceptions import VerifyException

from infopt.accel import AccelConfig, AccelError
from infopt.mlir.npu import NPU, command_stream, lower_to_npu, matmul_module, run_on_npu
from infopt.mlir.npu.commands import analytic_cycles, command_kinds, tile_sizes
from infopt.mlir.tools import mlir_opt
from infopt.mlir.xdsl_ir import parse_module, print_ir

rng = np.random.default_rng()


def _operands(M, N, K, cfg):
    if cfg.dtype == "int8":
        A, B = rng.integers(-128, 128, (M, K), dtype=np.int8), rng.integers(-128, 128, (K, N), dtype=np.int8)
        return A, B, A.astype(np.int32) @ B.astype(np.int32)
    A, B = rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32)
    return A, B, A @ B


CASES = [
    ((10, 5, 6), AccelConfig(4, 4, "ws", "int8")),
    ((37, 29, 23), AccelConfig(8, 4, "os", "float32", wt_sram_bytes=256)),
    ((100, 30, 50), AccelConfig(8, 8, "ws", "int8", dma_setup_cycles=10, in_sram_bytes=2000)),
    ((7, 3, 2), AccelConfig(4, 4, "os", "int8", dma_bytes_per_cycle=3)),
    ((1, 1, 1), AccelConfig(2, 3, "ws", "float32")),
]


@pytest.mark.parametrize("shape,cfg", CASES)
def test_the_lowering_runs_exactly_on_the_simulator_with_the_analytic_cycle_count(shape, cfg):
    M, N, K = shape
    module = lower_to_npu(matmul_module(M, N, K, cfg), cfg)
    assert not [op for op in module.walk() if op.name.startswith("linalg.")]
    A, B, want = _operands(M, N, K, cfg)
    C, stats, program = run_on_npu(module, A, B, cfg)
    np.testing.assert_allclose(C, want, rtol=1e-5, atol=1e-4)
    assert stats.cycles == analytic_cycles(M, N, K, cfg)
    TM, TN, TK = tile_sizes(M, N, K, cfg)
    blocks = lambda n, t: -(-n // t)  # noqa: E731
    assert command_kinds(program) == {"dma_load": blocks(M, TM) * blocks(K, TK) * (1 + blocks(N, TN)),
                                      "matmul": blocks(M, TM) * blocks(N, TN) * blocks(K, TK),
                                      "dma_store": blocks(M, TM) * blocks(N, TN)}


def test_the_lowered_ir_prints_parses_back_and_mlir_opt_reads_its_generic_form():
    cfg = AccelConfig(4, 4, "ws", "int8")
    module = lower_to_npu(matmul_module(10, 5, 6, cfg), cfg)
    text = print_ir(module)
    assert "npu.matmul" in text and "scf.for" in text
    again = parse_module(text, [NPU])
    assert len(command_stream(again)) == len(command_stream(module))
    mlir_opt(print_ir(module, generic=True), "--allow-unregistered-dialect", "--verify-each")


def test_a_config_of_the_other_number_format_is_refused():
    module = matmul_module(4, 4, 4, AccelConfig(4, 4, "ws", "float32"))
    with pytest.raises(AccelError, match="int8"):
        lower_to_npu(module, AccelConfig(4, 4, "ws", "int8"))


def test_the_emitter_refuses_an_unlowered_function():
    with pytest.raises(AccelError, match="lower it to npu ops first"):
        command_stream(matmul_module(4, 4, 4, AccelConfig()))


HEAD = """func.func @f(%A: memref<10x6xi8>, %C: memref<10x5xi32>, %F: memref<4x4xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c9 = arith.constant 9 : index
  %t = arith.constant true
"""


@pytest.mark.parametrize("line,message", [
    ('npu.dma_load %A[%c0, %c0] sizes [%c4, %c4] to "sram" [%c0] : memref<10x6xi8>', "buffer must be one of"),
    ('npu.dma_load %C[%c0, %c0] sizes [%c4, %c4] to "in" [%c0] : memref<10x5xi32>', "holds i8 or f32"),
    ('npu.dma_load %A[%c9, %c0] sizes [%c4, %c4] to "in" [%c0] : memref<10x6xi8>', "outside the tensor"),
    ('npu.dma_store %A[%c0, %c0] sizes [%c4, %c4] from out [%c0] : memref<10x6xi8>', "results are i32"),
    ('npu.matmul %c0, %c0, %c0 sizes [%c4, %c4, %c4] acc %t {tile = array<i64: 8, 4>, dataflow = "ws", dtype = i8}',
     "three positive sizes"),
    ('npu.matmul %c0, %c0, %c0 sizes [%c4, %c4, %c4] acc %t {tile = array<i64: 8, 4, 4>, dataflow = "rs", dtype = i8}',
     "dataflow must be"),
    ('npu.matmul %c0, %c0, %c0 sizes [%c4, %c4, %c4] acc %t {tile = array<i64: 8, 4, 4>, dataflow = "ws", dtype = i32}',
     "dtype must be i8 or f32"),
    ('npu.matmul %c0, %c0, %c0 sizes [%c9, %c4, %c4] acc %t {tile = array<i64: 8, 4, 4>, dataflow = "ws", dtype = i8}',
     "m = 9 is outside 1..8"),
])
def test_verifiers_reject_ill_formed_ops_saying_what_is_wrong(line, message):
    with pytest.raises(VerifyException, match=message):
        parse_module(HEAD + "  " + line + "\n  return\n}\n", [NPU])


def test_ops_built_in_python_verify():
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import IndexType, IntegerAttr

    from infopt.mlir.npu import MatmulOp

    c = arith.ConstantOp(IntegerAttr(3, IndexType())).result
    t = arith.ConstantOp(IntegerAttr(1, 1)).result
    for dtype in (i8, Float32Type()):
        MatmulOp(c, c, c, c, c, c, t, (4, 4, 4), "os", dtype).verify_()
    with pytest.raises(VerifyException, match="dtype"):
        MatmulOp(c, c, c, c, c, c, t, (4, 4, 4), "os", i32).verify_()


def _schedule_with(**wrong):
    """The library's schedule, with npu.matmul's tile / dataflow / dtype attributes replaced by `wrong`'s."""
    from infopt.mlir.npu.lower import emit_matmul_schedule

    def emit(nb, A, B, C, config):
        real = nb.matmul

        def matmul(a, b, c, m, n, k, acc, tile, dataflow, dtype):
            tile = wrong.get("tile", lambda t: t)(tile)
            return real(a, b, c, m, n, k, acc, tile, wrong.get("dataflow", dataflow), wrong.get("dtype", dtype))

        nb.matmul = matmul
        emit_matmul_schedule(nb, A, B, C, config)
    return emit


@pytest.mark.parametrize("cfg,wrong,message", [
    (AccelConfig(4, 4, "ws", "int8"), {"dataflow": "os"}, "its dataflow attribute is 'os', but the accelerator runs 'ws'"),
    (AccelConfig(4, 4, "os", "int8"), {"dataflow": "ws"}, "its dataflow attribute is 'ws', but the accelerator runs 'os'"),
    (AccelConfig(4, 4, "ws", "int8"), {"dtype": Float32Type()}, "its dtype attribute is f32, but the operands are i8"),
    (AccelConfig(4, 4, "os", "float32"), {"dtype": i8}, "its dtype attribute is i8, but the operands are f32"),
    # (TK, TN, TM) instead of (TM, TN, TK): the tile no longer fits the 4 x 4 array's K (TM = 10 here) ...
    (AccelConfig(4, 4, "ws", "int8"), {"tile": lambda t: (t[2], t[1], t[0])}, "tile attribute"),
    # ... and a tile bound smaller than the sizes the loops run is caught at the op that exceeds it
    (AccelConfig(4, 4, "ws", "int8"), {"tile": lambda t: (1, t[1], t[2])}, "m = .* is outside 1..1, its bound in the tile"),
    (AccelConfig(4, 4, "os", "float32"), {"tile": lambda t: (t[0], t[1], 1)}, "k = .* is outside 1..1, its bound"),
])
def test_the_emitter_refuses_matmul_attributes_that_disagree_with_the_config_or_the_operands(cfg, wrong, message):
    from infopt.mlir.npu.lower import LowerMatmulToNpu  # noqa: F401 (the pattern lower_to_npu applies)

    M, N, K = 10, 5, 6
    module = lower_to_npu(matmul_module(M, N, K, cfg), cfg, emit=_schedule_with(**wrong), tidy=False)
    A, B, _ = _operands(M, N, K, cfg)
    with pytest.raises(AccelError, match=message) as err:
        run_on_npu(module, A, B, cfg)
    assert "npu.matmul" in str(err.value)


def test_the_emitter_checks_nothing_without_a_config_and_everything_with_one():
    cfg = AccelConfig(4, 4, "ws", "int8")
    module = lower_to_npu(matmul_module(10, 5, 6, cfg), cfg, emit=_schedule_with(dataflow="os"))
    assert len(command_stream(module)) > 0           # the IR alone is well formed ...
    with pytest.raises(AccelError, match="dataflow"):
        command_stream(module, config=cfg)          # ... but not for this accelerator


@pytest.mark.parametrize("shape,cfg", CASES)
def test_tidying_leaves_no_minimum_that_a_constant_would_do(shape, cfg):
    """Canonicalize removes one-iteration loops; the edge sizes they leave (min(10, 10)) are folded too."""
    from infopt.mlir.npu.dialect import constant_index

    module = lower_to_npu(matmul_module(*shape, cfg), cfg)
    for op in module.walk():
        if op.name == "arith.minsi":
            assert op.lhs is not op.rhs, print_ir(module)
            assert constant_index(op.lhs) is None or constant_index(op.rhs) is None, print_ir(module)
    A, B, want = _operands(*shape, cfg)
    np.testing.assert_allclose(run_on_npu(module, A, B, cfg)[0], want, rtol=1e-5, atol=1e-4)
