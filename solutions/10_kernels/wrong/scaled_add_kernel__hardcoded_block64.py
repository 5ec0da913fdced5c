from infopt.kernels.backend import tl, triton


@triton.jit
def scaled_add_kernel(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    """Hard-codes the block size of the visible tests: program pid starts at pid * 64, not pid * BLOCK."""
    pid = tl.program_id(0)
    offsets = pid * 64 + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, alpha * x + y, mask=mask)
