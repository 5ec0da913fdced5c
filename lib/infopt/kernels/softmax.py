"""Row softmax in Triton: the one-pass kernel (a row in one block: exercise 2's reference) and the online kernel for
rows longer than a block (running max and sum in one sweep, then a write sweep: two reads of x instead of three).

Math is fp32 inside; the output has x's dtype. x may be a row-strided view (a slice of a wider matrix): the kernels
take the row strides and need stride 1 along a row.
"""
from __future__ import annotations

import torch

from .backend import next_power_of_2, runnable, tl, triton
from .elementwise import check_block, check_float, check_matrix, check_positive_int

__all__ = ["softmax_kernel", "online_softmax_kernel", "softmax", "softmax_online", "softmax_reference",
           "min_traffic", "ONE_PASS_MAX_COLS"]

#: Longest row `softmax` keeps in one block (registers of one program on a GPU); longer rows go online.
ONE_PASS_MAX_COLS = 4096


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_rows, n_cols, x_row_stride, out_row_stride, BLOCK: tl.constexpr):
    """Program r computes row r: load the row once (masked lanes -inf), subtract its max, exp, sum, divide, store once.

    BLOCK >= n_cols (a power of two); n_rows is the grid size (one program per row)."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)                      # masked lanes: exp(-inf) = 0, so they add nothing to the sum
    out = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, out.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def online_softmax_kernel(x_ptr, out_ptr, n_rows, n_cols, x_row_stride, out_row_stride, BLOCK: tl.constexpr):
    """Softmax of row r (program r) for rows longer than BLOCK, reading x twice.

    A naive blocked softmax sweeps the row three times (max, then sum of exp(x - max), then write), reading x 3 times.
    The online form keeps a running max m and a running sum l of exp(x - m), and rescales l by exp(m_old - m_new)
    whenever the max grows, so sweep 1 yields both the max and the sum; sweep 2 writes exp(x - m) / l. The running
    values are kept per lane (BLOCK of them, no reduction inside the loop) and combined once after the sweep."""
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    cols = tl.arange(0, BLOCK)
    m = tl.full((BLOCK,), -float("inf"), tl.float32)
    l = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)   # a lane that saw only -inf: avoid -inf - -inf
        l = l * tl.exp(m - m_safe) + tl.exp(x - m_safe)
        m = m_new
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(l * tl.exp(m - row_max), axis=0)
    inv = 1.0 / row_sum
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=-float("inf")).to(tl.float32)
        out = tl.exp(x - row_max) * inv
        tl.store(out_row + start + cols, out.to(out_ptr.dtype.element_ty), mask=mask)


def _checked_rows(x: torch.Tensor) -> torch.Tensor:
    check_float(check_matrix(x, "x", inner_contiguous=True), "x")
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"x has shape {tuple(x.shape)}: softmax needs at least one row and one column")
    return x


def _num_warps(block: int) -> int:
    return 4 if block < 2048 else 8 if block < 8192 else 16


def _launch(kernel, x: torch.Tensor, block: int) -> torch.Tensor:
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n_rows, n_cols = x.shape
    runnable(kernel, x, out)[(n_rows,)](x, out, n_rows, n_cols, x.stride(0), out.stride(0), BLOCK=block,
                                        num_warps=_num_warps(block))
    return out


def softmax(x: torch.Tensor, block: int | None = None) -> torch.Tensor:
    """Softmax over the last dim of a 2-D x: one pass when the row fits in `block` (default next_power_of_2(n_cols)
    up to ONE_PASS_MAX_COLS), else the online kernel with that block (default 1024)."""
    x = _checked_rows(x)
    n_cols = x.shape[1]
    if block is None:
        block = next_power_of_2(n_cols) if n_cols <= ONE_PASS_MAX_COLS else 1024
    block = check_block(block, "block")
    if block >= n_cols:
        return _launch(softmax_kernel, x, block)
    return _launch(online_softmax_kernel, x, block)


def softmax_online(x: torch.Tensor, block: int) -> torch.Tensor:
    """Softmax over the last dim of a 2-D x with `online_softmax_kernel`, sweeping each row in `block` columns."""
    x = _checked_rows(x)
    return _launch(online_softmax_kernel, x, check_block(block, "block"))


def softmax_reference(x: torch.Tensor) -> torch.Tensor:
    """torch.softmax over the last dim, in float64."""
    return torch.softmax(x.double(), dim=-1)


def min_traffic(n_rows: int, n_cols: int) -> dict[str, int]:
    """Elements a row softmax must at least move, keyed by the kernels' argument names: x read once, out written
    once."""
    numel = check_positive_int(n_rows, "n_rows") * check_positive_int(n_cols, "n_cols")
    return {"x_ptr": numel, "out_ptr": numel}
