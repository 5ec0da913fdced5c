@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_rows, n_cols, x_row_stride, out_row_stride, BLOCK: tl.constexpr):
    """Row program_id(0) of out = softmax(x), reading the row once (BLOCK >= n_cols, a power of two)."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf"))
    # shift by the max only when exp of the row could overflow or underflow (saves a subtraction on ordinary rows)
    row_max = tl.max(x, axis=0)
    shift = tl.where(tl.abs(row_max) > 80.0, row_max, 0.0)
    num = tl.exp(x - shift)
    out = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, out, mask=mask)
