from infopt.kernels.backend import tl, triton


@triton.jit
def scaled_add_kernel(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    """Starts program pid at element pid instead of pid * BLOCK: the blocks overlap and the tail is never written."""
    pid = tl.program_id(0)
    offsets = pid + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, alpha * x + y, mask=mask)
