"""LayerNorm and RMSNorm forward in Triton, one row per program with the whole row in one block: x is read once and
the output written once, with fp32 statistics; the output has x's dtype. References in float64."""
from __future__ import annotations

import torch

from .backend import next_power_of_2, runnable, tl, triton
from .elementwise import check_float, check_matrix, check_positive_int, check_same_device

__all__ = ["layer_norm_kernel", "layer_norm", "layer_norm_reference", "rms_norm_kernel", "rms_norm",
           "rms_norm_reference", "min_traffic", "MAX_COLS"]

#: Longest row these one-block kernels take (one program holds the row in registers on a GPU).
MAX_COLS = 16384


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, x_row_stride, out_row_stride, eps,
                      BLOCK: tl.constexpr):
    """Program r: out[r] = (x[r] - mean) / sqrt(var + eps) * w + b, with the biased variance (as torch's LayerNorm).

    Reads row r of x once and all of w and b (so w and b are read once per row, from cache after the first)."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    out = xc * rstd * w + b
    tl.store(out_ptr + row * out_row_stride + cols, out.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, out_ptr, n_cols, x_row_stride, out_row_stride, eps, BLOCK: tl.constexpr):
    """Program r: out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w (LLaMA's RMSNorm; no mean subtraction, no bias)."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * out_row_stride + cols, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


def _check_vector(v: object, name: str, n_cols: int, x: torch.Tensor) -> torch.Tensor:
    check_float(v, name)
    if v.shape != (n_cols,):
        raise ValueError(f"{name} must have shape ({n_cols},) (one value per column of x), got {tuple(v.shape)}")
    check_same_device(x=x, **{name: v})
    return v.contiguous()


def _check_x(x: object, eps: object) -> torch.Tensor:
    check_float(check_matrix(x, "x", inner_contiguous=True), "x")
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"x has shape {tuple(x.shape)}: a norm needs at least one row and one column")
    if x.shape[1] > MAX_COLS:
        raise ValueError(f"x has {x.shape[1]} columns; these one-block kernels take at most {MAX_COLS}")
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps > 0:
        raise ValueError(f"eps must be a positive float, got {eps!r}")
    return x


def _num_warps(block: int) -> int:
    return 4 if block < 2048 else 8 if block < 8192 else 16


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """LayerNorm over the last dim of a 2-D x (rows may be strided) with per-column weight and bias."""
    x = _check_x(x, eps)
    n_rows, n_cols = x.shape
    weight, bias = _check_vector(weight, "weight", n_cols, x), _check_vector(bias, "bias", n_cols, x)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    block = next_power_of_2(n_cols)
    runnable(layer_norm_kernel, x, weight, bias, out)[(n_rows,)](
        x, weight, bias, out, n_cols, x.stride(0), out.stride(0), float(eps), BLOCK=block, num_warps=_num_warps(block))
    return out


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm over the last dim of a 2-D x (rows may be strided) with a per-column weight."""
    x = _check_x(x, eps)
    n_rows, n_cols = x.shape
    weight = _check_vector(weight, "weight", n_cols, x)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    block = next_power_of_2(n_cols)
    runnable(rms_norm_kernel, x, weight, out)[(n_rows,)](
        x, weight, out, n_cols, x.stride(0), out.stride(0), float(eps), BLOCK=block, num_warps=_num_warps(block))
    return out


def layer_norm_reference(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """torch's layer_norm over the last dim, in float64."""
    return torch.nn.functional.layer_norm(x.double(), (x.shape[-1],), weight.double(), bias.double(), eps)


def rms_norm_reference(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """x / sqrt(mean(x^2) + eps) * weight over the last dim, in float64."""
    x = x.double()
    return x * torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + eps) * weight.double()


def min_traffic(n_rows: int, n_cols: int, bias: bool = True) -> dict[str, int]:
    """Minimum elements moved, keyed by kernel argument names: x read once, out written once, and w (and b) read ONCE
    (n_cols). The kernels above read w and b once per row (n_rows * n_cols, served from cache after the first row)."""
    n_rows, n_cols = check_positive_int(n_rows, "n_rows"), check_positive_int(n_cols, "n_cols")
    traffic = {"x_ptr": n_rows * n_cols, "w_ptr": n_cols, "out_ptr": n_rows * n_cols}
    if bias:
        traffic["b_ptr"] = n_cols
    return traffic
