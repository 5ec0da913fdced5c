"""infopt.kernels.testing: tolerances, poison, odd sizes, reference checks that name unwritten elements, traffic."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from infopt.grading.errors import GradingError, HarnessError
from infopt.kernels.backend import tl, triton
from infopt.kernels.testing import (check_against_reference, check_kernel, check_traffic, describe_traffic,
                                    odd_sizes, poison_, random_inputs, tolerance)
from infopt.kernels.trace import run_traced


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def three_pass_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(x_ptr + offs, mask=mask)
    b = tl.load(x_ptr + offs, mask=mask)
    c = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, a + b - c, mask=mask)


def test_tolerance_by_dtype():
    assert tolerance(torch.float64) == (1e-10, 1e-10) and tolerance(torch.float32) == (1e-5, 1e-5)
    assert tolerance(torch.bfloat16) == (2e-2, 2e-2) and tolerance(torch.float16) == (1e-2, 1e-2)
    assert tolerance(torch.int32) == (0.0, 0.0)
    with pytest.raises(ValueError, match="no tolerance for dtype"):
        tolerance("float32")


def test_poison_fills_floats_with_nan_and_ints_with_the_minimum():
    f = torch.zeros(3, dtype=torch.float16)
    assert poison_(f) is f and torch.isnan(f).all()
    i = poison_(torch.zeros(2, 2, dtype=torch.int32))
    assert (i == torch.iinfo(torch.int32).min).all()
    with pytest.raises(TypeError, match="bool"):
        poison_(torch.zeros(2, dtype=torch.bool))


def test_random_inputs_are_reproducible_and_of_the_asked_shapes():
    a = random_inputs([(3, 5), 7], torch.float32, seed=1)
    b = random_inputs([(3, 5), 7], torch.float32, seed=1)
    assert [t.shape for t in a] == [(3, 5), (7,)] and all(t.dtype == torch.float32 for t in a)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not torch.equal(a[0], random_inputs([(3, 5)], torch.float32, seed=2)[0])
    ints = random_inputs([100], torch.int8, seed=0)[0]
    assert ints.dtype == torch.int8 and ints.min() >= -8 and ints.max() < 8
    assert random_inputs([4], torch.bfloat16, seed=0)[0].dtype == torch.bfloat16
    with pytest.raises(ValueError, match="a shape must be"):
        random_inputs([(2, -1)], torch.float32, seed=0)


def test_odd_sizes_include_one_and_a_prime_and_no_power_of_two_beyond_one():
    sizes = odd_sizes(np.random.default_rng(0), 1, 300, 6)
    assert len(sizes) == 6 == len(set(sizes)) and sizes[0] == 1 and all(1 <= s <= 300 for s in sizes)
    assert any(s > 1 and all(s % p for p in range(2, s)) for s in sizes)
    assert all(s & (s - 1) for s in sizes[1:])
    assert odd_sizes(3, 1, 300, 6) == odd_sizes(3, 1, 300, 6)
    assert 1 not in odd_sizes(0, 10, 20, 3)
    with pytest.raises(ValueError, match="lo .* must be <= hi"):
        odd_sizes(0, 20, 10, 3)


def test_check_against_reference_accepts_a_close_output():
    want = torch.linspace(-1, 1, 12, dtype=torch.float64).reshape(3, 4)
    check_against_reference("out", (want + 1e-7).float(), want, torch.float32)
    check_against_reference("out", want.half(), want, torch.float16)


def test_check_against_reference_checks_shape_then_dtype():
    want = torch.zeros(4, dtype=torch.float64)
    with pytest.raises(GradingError, match=r"out: wrong shape: expected \(4,\), got \(2, 2\)"):
        check_against_reference("out", torch.zeros(2, 2), want, torch.float32)
    with pytest.raises(GradingError, match="wrong dtype: expected torch.float32, got torch.float64"):
        check_against_reference("out", torch.zeros(4, dtype=torch.float64), want, torch.float32)
    with pytest.raises(GradingError, match="expected a torch.Tensor"):
        check_against_reference("out", [0.0] * 4, want, torch.float32)
    with pytest.raises(HarnessError):
        check_against_reference("out", torch.zeros(4), [0.0] * 4, torch.float32)


def test_a_never_written_element_is_reported_by_index():
    want = torch.arange(12, dtype=torch.float64).reshape(3, 4)
    got = want.float().clone()
    got[2, 1] = float("nan")
    with pytest.raises(GradingError, match=r"out: 1 of 12 elements were never written .* at \[2, 1\]: does your grid"):
        check_against_reference("out", got, want, torch.float32)
    ints = torch.arange(5, dtype=torch.int32)
    ints[4] = torch.iinfo(torch.int32).min
    with pytest.raises(GradingError, match=r"never written .* at \[4\]"):
        check_against_reference("idx", ints, torch.arange(5), torch.int32)


def test_a_nan_the_reference_also_has_is_not_unwritten():
    want = torch.tensor([1.0, float("nan")], dtype=torch.float64)
    check_against_reference("out", want.float(), want, torch.float32)


def test_wrong_values_get_check_arrays_message():
    want = torch.arange(6, dtype=torch.float64)
    got = want.float().clone()
    got[3] += 0.5
    with pytest.raises(GradingError, match=r"(?s)out: values differ at 1 of 6 positions.*\[3\]: 3\.0 vs 3\.5.*"
                                           r"\.\.\.x\.\."):
        check_against_reference("out", got, want, torch.float32)
    check_against_reference("out", got, want, torch.float32, atol=0.6)  # a looser tolerance passes


def test_a_poisoned_output_of_a_kernel_missing_its_last_block_is_caught():
    n = 50
    x, = random_inputs([n], torch.float32, seed=0)
    out = poison_(torch.empty(n))
    run_traced(copy_kernel, (3,), x, out, n, BLOCK=16)   # 3 x 16 = 48 < 50: the grid is one block short
    with pytest.raises(GradingError, match=r"2 of 50 elements were never written .* at \[48\], \[49\]"):
        check_against_reference("copy", out, x.double(), torch.float32)


def test_describe_traffic_says_how_many_passes():
    n = 20
    x = torch.randn(n)
    log = run_traced(three_pass_kernel, (1,), x, torch.empty(n), n, BLOCK=32)
    text = describe_traffic(log, {"x": n, "out_ptr": n})
    assert "your three_pass_kernel reads x_ptr 3 times over (60 elements = 3 x 20); one pass reads it once (20)" \
        in text
    assert "writes out_ptr once (20 elements), the minimum" in text
    with pytest.raises(GradingError, match="traffic of three_pass_kernel is off for x_ptr:\n.*3 times"):
        check_traffic(log, {"x_ptr": n, "out_ptr": n})
    check_traffic(log, {"x_ptr": n, "out_ptr": n}, slack=3.0)
    with pytest.raises(HarnessError, match="not a tensor"):
        describe_traffic(log, {"y_ptr": n})


def test_check_kernel_runs_every_size_and_collects_logs():
    def launch(x):
        out = poison_(torch.empty_like(x))
        return out, run_traced(copy_kernel, (triton.cdiv(x.numel(), 16),), x, out, x.numel(), BLOCK=16)

    logs = check_kernel(launch, lambda x: x, lambda n: random_inputs([n], torch.float32, seed=n), [1, 17, 31],
                        torch.float32, "copy")
    assert [log.writes("out_ptr") for log in logs] == [1, 17, 31]
    with pytest.raises(GradingError, match=r"copy \(size 17\): values differ"):
        check_kernel(launch, lambda x: x + 1, lambda n: random_inputs([n], torch.float32, seed=n), [17],
                     torch.float32, "copy")


@triton.jit
def _nan_tail_kernel(out_ptr, n, BLOCK: tl.constexpr):
    """Writes 1.0 to the first half of its n elements and NaN (0 / 0) to the rest of them; leaves the tail beyond n."""
    offs = tl.arange(0, BLOCK)
    zero = tl.zeros((BLOCK,), dtype=tl.float32)
    value = tl.where(offs < n // 2, zero + 1.0, zero / zero)
    tl.store(out_ptr + offs, value, mask=offs < n)


def test_a_stored_nan_is_told_apart_from_an_element_never_written():
    from infopt.kernels.testing import written_mask
    from infopt.kernels.trace import run_traced

    out = poison_(torch.empty(8))
    log = run_traced(_nan_tail_kernel, (1,), out, 6, BLOCK=8)
    mask = written_mask(log, "out_ptr", out)
    assert mask.tolist() == [True] * 6 + [False] * 2
    with pytest.raises(GradingError, match=r"stored NaN into 3 of 8 elements"):
        check_against_reference("out", out, torch.ones(8, dtype=torch.float64), torch.float32, written=mask)
    out[3:6] = 1.0
    with pytest.raises(GradingError, match=r"2 of 8 elements were never written"):
        check_against_reference("out", out, torch.ones(8, dtype=torch.float64), torch.float32, written=mask)
