from infopt.kernels.backend import tl, triton


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_rows, n_cols, x_row_stride, out_row_stride, BLOCK: tl.constexpr):
    """Stores exp(x - max), then loads out back and divides in place: out is written twice."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_row_stride + cols, num, mask=mask)
    total = tl.sum(num, axis=0)
    e = tl.load(out_ptr + row * out_row_stride + cols, mask=mask)
    tl.store(out_ptr + row * out_row_stride + cols, e / total, mask=mask)
