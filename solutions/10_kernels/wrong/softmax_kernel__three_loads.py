from infopt.kernels.backend import tl, triton


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_rows, n_cols, x_row_stride, out_row_stride, BLOCK: tl.constexpr):
    """The three sweeps of the naive softmax, one load of the row each: x is read 3 times."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    row_max = tl.max(tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf")), axis=0)
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf"))
    total = tl.sum(tl.exp(x - row_max), axis=0)
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf"))
    tl.store(out_ptr + row * out_row_stride + cols, tl.exp(x - row_max) / total, mask=mask)
