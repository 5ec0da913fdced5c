"""infopt.kernels.softmax: the one-pass softmax_kernel (exercise 2's reference) and the online kernel, in Triton's
interpreter against float64 torch on odd widths, strided rows, half dtypes, huge and -inf entries; the exact
signature; the launcher's choice of kernel; error messages."""
from __future__ import annotations

import inspect

import pytest

torch = pytest.importorskip("torch")

from infopt.kernels.backend import interpreted  # noqa: E402
from infopt.kernels.softmax import (  # noqa: E402
    ONE_PASS_MAX_COLS, min_traffic, online_softmax_kernel, softmax, softmax_kernel, softmax_online,
    softmax_reference,
)

torch.set_num_threads(1)


def assert_close(got: torch.Tensor, want: torch.Tensor, tol: float) -> None:
    assert got.shape == want.shape, f"shape {tuple(got.shape)}, expected {tuple(want.shape)}"
    err = (got.double() - want).abs().max().item()
    assert err <= tol, f"max abs error {err:.3g} > {tol}"


def rows(n_rows: int, n_cols: int, seed: int, scale: float = 3.0) -> torch.Tensor:
    return torch.randn(n_rows, n_cols, generator=torch.Generator().manual_seed(seed)) * scale


def test_signatures_are_the_plan_ones() -> None:
    want = ["x_ptr", "out_ptr", "n_rows", "n_cols", "x_row_stride", "out_row_stride", "BLOCK"]
    assert list(inspect.signature(softmax_kernel.fn).parameters) == want
    assert list(inspect.signature(online_softmax_kernel.fn).parameters) == want


@pytest.mark.parametrize("shape", [(1, 1), (5, 37), (3, 128), (4, 300)])
def test_one_pass_matches_reference(shape: tuple[int, int]) -> None:
    x = rows(*shape, seed=shape[1])
    out = softmax(x)
    assert out.dtype == torch.float32
    assert_close(out, softmax_reference(x), 1e-6)


def test_strided_rows_in_and_out() -> None:
    wide = rows(6, 300, seed=1)
    x = wide[:, 17:250]                                  # row stride 300, n_cols 233 (not a power of two)
    assert_close(softmax(x), softmax_reference(x), 1e-6)
    buf = torch.full((6, 260), float("nan"))
    out = buf[:, 10:243]                                 # out row stride 260
    interpreted(softmax_kernel)[(6,)](x, out, 6, 233, x.stride(0), out.stride(0), BLOCK=256)
    assert_close(out, softmax_reference(x), 1e-6)
    assert buf[:, :10].isnan().all() and buf[:, 243:].isnan().all(), "wrote outside the output's columns"


@pytest.mark.parametrize("block", [32, 64])
def test_online_matches_reference(block: int) -> None:
    x = rows(3, 201, seed=block, scale=10.0)
    assert_close(softmax_online(x, block), softmax_reference(x), 1e-6)


def test_online_rescales_when_the_max_grows_late() -> None:
    x = torch.arange(200, dtype=torch.float32).repeat(2, 1) * 0.5     # the max sits in the last block
    x[1] = x[1].flip(0)                                               # ... and in the first
    assert_close(softmax_online(x, 32), softmax_reference(x), 1e-6)


def test_large_values_do_not_overflow_and_minus_inf_is_zero() -> None:
    x = rows(3, 100, seed=2, scale=1000.0)
    x[0, :40] = -float("inf")
    x[2, 64:] = -float("inf")                            # a whole online block of -inf in row 2
    want = softmax_reference(x)
    for got in (softmax(x), softmax_online(x, 32)):
        assert not got.isnan().any()
        assert_close(got, want, 1e-6)
        assert (got[0, :40] == 0).all()


@pytest.mark.parametrize("dtype,tol", [(torch.float16, 1e-3), (torch.bfloat16, 8e-3)])
def test_half_dtypes(dtype: torch.dtype, tol: float) -> None:
    x = rows(4, 77, seed=3).to(dtype)
    for got in (softmax(x), softmax_online(x, 32)):
        assert got.dtype == dtype
        assert_close(got, softmax_reference(x), tol)


def test_softmax_picks_online_for_long_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    import infopt.kernels.softmax as mod

    used = []
    real = mod._launch
    monkeypatch.setattr(mod, "_launch", lambda kernel, x, block: used.append((kernel, block)) or real(kernel, x, block))
    x = rows(1, ONE_PASS_MAX_COLS + 5, seed=4)
    assert_close(softmax(x), softmax_reference(x), 1e-6)
    softmax(rows(2, 50, seed=5))
    softmax(rows(2, 50, seed=5), block=16)
    assert used == [(online_softmax_kernel, 1024), (softmax_kernel, 64), (online_softmax_kernel, 16)]


def test_bad_inputs_raise_clear_errors() -> None:
    with pytest.raises(ValueError, match="2-D"):
        softmax(torch.randn(10))
    with pytest.raises(ValueError, match="contiguous"):
        softmax(torch.randn(8, 4).t())
    with pytest.raises(TypeError, match="dtype"):
        softmax(torch.ones(2, 3, dtype=torch.int32))
    with pytest.raises(ValueError, match="power of two"):
        softmax_online(rows(2, 40, seed=0), 24)
    with pytest.raises(ValueError, match="at least one"):
        softmax(torch.empty(0, 5))


def test_min_traffic() -> None:
    assert min_traffic(3, 7) == {"x_ptr": 21, "out_ptr": 21}
    with pytest.raises(ValueError, match="n_cols"):
        min_traffic(3, 0)


def test_one_pass_reads_x_once_and_writes_out_once() -> None:
    from infopt.kernels.testing import check_traffic
    from infopt.kernels.trace import run_traced

    x = rows(4, 100, seed=6)[:, :77]                     # strided rows, n_cols not a power of two
    out = torch.empty(4, 77)
    log = run_traced(softmax_kernel, (4,), x, out, 4, 77, x.stride(0), out.stride(0), BLOCK=128)
    assert (log.reads("x_ptr"), log.writes("out_ptr")) == (4 * 77, 4 * 77)
    assert log.distinct_reads("x_ptr") == 4 * 77 and log.never_written("out_ptr").size == 0
    check_traffic(log, min_traffic(4, 77))               # reads over the minimum: exactly 1.0
    assert_close(out, softmax_reference(x), 1e-6)


def test_online_reads_x_twice() -> None:
    from infopt.kernels.trace import run_traced

    x, out = rows(2, 150, seed=7), torch.empty(2, 150)
    log = run_traced(online_softmax_kernel, (2,), x, out, 2, 150, x.stride(0), out.stride(0), BLOCK=32)
    assert log.passes("x_ptr") == pytest.approx(2.0)
    assert log.writes("out_ptr") == 300 and log.distinct_reads("x_ptr") == 300
    assert_close(out, softmax_reference(x), 1e-6)
