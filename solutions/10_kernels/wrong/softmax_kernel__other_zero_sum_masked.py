from infopt.kernels.backend import tl, triton


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_rows, n_cols, x_row_stride, out_row_stride, BLOCK: tl.constexpr):
    """Loads the masked lanes as 0.0 and zeroes them only in the sum: the max still includes them."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0)
    z = x - tl.max(x, axis=0)
    num = tl.where(mask, tl.exp(z), 0.0)
    tl.store(out_ptr + row * out_row_stride + cols, num / tl.sum(num, axis=0), mask=mask)
