@triton.jit
def scaled_add_kernel(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    """out[i] = alpha * x[i] + y[i] for i < n; program pid handles elements pid*BLOCK .. pid*BLOCK + BLOCK - 1."""
    pid = tl.program_id(0)
    # cyclic distribution: lane j of program pid takes element pid + j * num_programs
    offsets = pid + tl.arange(0, BLOCK) * tl.num_programs(0)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, alpha * x + y, mask=mask)
