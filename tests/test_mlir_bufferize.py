"""infopt.mlir.bufferize: the in-place rule agrees with mlir-opt's one-shot bufferization, and running with buffers
shows what a wrong decision costs."""
import numpy as np
import pytest

from infopt.mlir.bufferize import (dest_ops, is_writable_argument, mlir_decisions, parse_program, random_program, reference_decisions,
                                   run_buffers, run_values)

PROGRAMS = [random_program(np.random.default_rng(seed), n_ops=3 + seed % 6) for seed in range(60)]


def _same(a, b):
    return len(a) == len(b) and all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a, b))


@pytest.mark.parametrize("k", range(0, 60, 2))
def test_reference_decisions_write_in_place_as_often_as_one_shot_bufferize_and_both_are_correct(k):
    text = PROGRAMS[k]
    f = parse_program(text)
    ours, theirs = reference_decisions(f), mlir_decisions(text)
    assert len(ours) == len(theirs) == len(dest_ops(f))
    assert sum(ours) == sum(theirs), text
    ins = [np.random.default_rng(k).standard_normal(8).astype(np.float32) for _ in f.body.block.args]
    want = run_values(f, ins)
    for decisions in (ours, theirs):
        run = run_buffers(f, ins, decisions)
        assert _same(run.results, want), text
        for arg, x, before in zip(f.body.block.args, run.arguments, ins):
            if not is_writable_argument(f, arg):
                assert np.array_equal(x, before), "a read-only argument was written"


def test_mostly_the_decisions_are_the_same_ones():
    same = sum(reference_decisions(parse_program(t)) == mlir_decisions(t) for t in PROGRAMS[:30])
    assert same >= 25      # the rest are ties: one-shot's bottom-up order picks the other of two equal writes


TEXT = """func.func @f(%x: tensor<4xf32>, %ro: tensor<4xf32> {bufferization.writable = false}) -> (tensor<4xf32>, tensor<4xf32>) {
  %c0 = arith.constant 0 : index
  %v = arith.constant 7.0 : f32
  %a = tensor.insert %v into %x[%c0] : tensor<4xf32>
  %s = tensor.extract %x[%c0] : tensor<4xf32>
  %b = linalg.fill ins(%s : f32) outs(%ro : tensor<4xf32>) -> tensor<4xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}
"""


def test_wrong_decisions_show_as_wrong_values_or_a_written_input():
    f = parse_program(TEXT)
    assert reference_decisions(f) == mlir_decisions(TEXT) == [False, False]
    x, ro = np.arange(4, dtype=np.float32), np.full(4, 5.0, np.float32)
    want = run_values(f, [x, ro])
    assert np.array_equal(want[1], np.zeros(4, np.float32))                    # %s read x[0] before the insert
    wrong = run_buffers(f, [x, ro], [True, False])
    assert not _same(wrong.results, want)                                      # the insert clobbered x[0]
    clobbered = run_buffers(f, [x, ro], [False, True])
    assert _same(clobbered.results, want) and not np.array_equal(clobbered.arguments[1], ro)
    assert run_buffers(f, [x, ro], [False, False]).allocations == 2


def test_a_decision_list_of_the_wrong_length_is_refused():
    with pytest.raises(ValueError, match="2 destination ops"):
        run_buffers(parse_program(TEXT), [np.zeros(4, np.float32)] * 2, [True])
