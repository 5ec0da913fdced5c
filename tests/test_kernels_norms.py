"""infopt.kernels.norms: layer_norm and rms_norm forward kernels in Triton's interpreter against float64 torch on
odd widths, strided rows, large offsets and half dtypes; error messages; min_traffic."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from infopt.kernels.norms import (  # noqa: E402
    MAX_COLS, layer_norm, layer_norm_reference, min_traffic, rms_norm, rms_norm_reference,
)

torch.set_num_threads(1)


def assert_close(got: torch.Tensor, want: torch.Tensor, tol: float) -> None:
    assert got.shape == want.shape, f"shape {tuple(got.shape)}, expected {tuple(want.shape)}"
    err = (got.double() - want).abs().max().item()
    assert err <= tol, f"max abs error {err:.3g} > {tol}"


def make(n_rows: int, n_cols: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n_rows, n_cols, generator=g) * 2 + 0.5, torch.randn(n_cols, generator=g),
            torch.randn(n_cols, generator=g))


@pytest.mark.parametrize("shape", [(1, 1), (3, 37), (4, 128), (2, 301)])
def test_layer_norm_matches_reference(shape: tuple[int, int]) -> None:
    x, w, b = make(*shape, seed=shape[1])
    out = layer_norm(x, w, b)
    assert out.dtype == x.dtype
    assert_close(out, layer_norm_reference(x, w, b), 2e-5)


@pytest.mark.parametrize("shape", [(1, 1), (3, 37), (2, 301)])
def test_rms_norm_matches_reference(shape: tuple[int, int]) -> None:
    x, w, _ = make(*shape, seed=shape[1] + 1)
    assert_close(rms_norm(x, w), rms_norm_reference(x, w), 2e-5)


def test_strided_rows_large_offset_and_eps() -> None:
    wide, w, b = make(5, 200, seed=7)
    view = (wide + 1000.0)[:, 3:103]              # mean far from 0 (E[x^2] - E[x]^2 would lose digits); stride 200
    assert view.stride(0) == 200
    w, b = w[:100], b[:100]
    assert_close(layer_norm(view, w, b, eps=1e-3), layer_norm_reference(view, w, b, eps=1e-3), 2e-4)
    assert_close(rms_norm(view, w, eps=0.5), rms_norm_reference(view, w, eps=0.5), 2e-5)


@pytest.mark.parametrize("dtype,tol", [(torch.float16, 1e-2), (torch.bfloat16, 6e-2)])
def test_half_dtypes_keep_their_dtype(dtype: torch.dtype, tol: float) -> None:
    x, w, b = make(3, 64, seed=9)
    x = x.to(dtype)
    for got, want in ((layer_norm(x, w, b), layer_norm_reference(x, w, b)), (rms_norm(x, w), rms_norm_reference(x, w))):
        assert got.dtype == dtype
        assert_close(got, want, tol)


def test_bad_inputs_raise_clear_errors() -> None:
    x, w, b = make(2, 16, seed=0)
    with pytest.raises(ValueError, match=r"shape \(16,\)"):
        layer_norm(x, w[:8], b)
    with pytest.raises(ValueError, match="bias"):
        layer_norm(x, w, b[None])
    with pytest.raises(ValueError, match="2-D"):
        rms_norm(x[0], w)
    with pytest.raises(ValueError, match="contiguous"):
        rms_norm(torch.randn(16, 16).t(), w)
    with pytest.raises(ValueError, match="eps"):
        rms_norm(x, w, eps=0.0)
    with pytest.raises(TypeError, match="dtype"):
        layer_norm(x.long(), w, b)
    with pytest.raises(TypeError, match="torch.Tensor"):
        rms_norm(x, [1.0] * 16)
    with pytest.raises(ValueError, match="at most"):
        rms_norm(torch.zeros(1, MAX_COLS + 1), torch.zeros(MAX_COLS + 1))


def test_min_traffic_states_weights_once() -> None:
    assert min_traffic(4, 10) == {"x_ptr": 40, "w_ptr": 10, "b_ptr": 10, "out_ptr": 40}
    assert min_traffic(4, 10, bias=False) == {"x_ptr": 40, "w_ptr": 10, "out_ptr": 40}


def test_norms_read_x_once_and_write_once() -> None:
    from infopt.kernels.norms import layer_norm_kernel, rms_norm_kernel
    from infopt.kernels.testing import check_traffic
    from infopt.kernels.trace import run_traced

    x, w, b = make(3, 50, seed=11)
    out = torch.empty_like(x)
    log = run_traced(layer_norm_kernel, (3,), x, w, b, out, 50, 50, 50, 1e-5, BLOCK=64)
    need = min_traffic(3, 50)
    check_traffic(log, {"x_ptr": need["x_ptr"], "out_ptr": need["out_ptr"]})      # exactly 1.0 pass each
    assert log.reads("w_ptr") == log.reads("b_ptr") == 3 * 50                     # once per row, as documented
    assert_close(out, layer_norm_reference(x, w, b), 2e-5)
    log = run_traced(rms_norm_kernel, (3,), x, w, out, 50, 50, 50, 1e-6, BLOCK=64)
    assert (log.reads("x_ptr"), log.writes("out_ptr"), log.reads("w_ptr")) == (150, 150, 150)
    assert_close(out, rms_norm_reference(x, w), 2e-5)


def test_eps_matters_for_small_rows() -> None:
    x, w, b = make(2, 40, seed=12)
    x = x * 1e-2                                   # var ~ 4e-4: eps = 1e-2 changes the result by ~ 25x
    for eps in (1e-6, 1e-2):
        assert_close(rms_norm(x, w, eps=eps), rms_norm_reference(x, w, eps=eps), 2e-5)
        assert_close(layer_norm(x, w, b, eps=eps), layer_norm_reference(x, w, b, eps=eps), 2e-5)
    assert (rms_norm(x, w, eps=1e-2) - rms_norm(x, w, eps=1e-6)).abs().max() > 0.1
