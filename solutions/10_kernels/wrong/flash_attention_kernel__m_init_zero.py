from infopt.kernels.backend import tl, triton


@triton.jit
def flash_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, stride_qh, stride_qs, stride_kh, stride_ks, stride_vh,
                           stride_vs, stride_oh, stride_os, S, scale, D: tl.constexpr, BLOCK_M: tl.constexpr,
                           BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    """Starts the running max at 0 instead of -inf: when every score is far below 0, exp underflows and l = 0."""
    pid_m = tl.program_id(0)
    h = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, D)
    q = tl.load(q_ptr + h * stride_qh + rows[:, None] * stride_qs + dims[None, :], mask=rows[:, None] < S, other=0.0)
    m_i = tl.zeros([BLOCK_M], tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    hi = S
    if CAUSAL:
        hi = tl.minimum((pid_m + 1) * BLOCK_M, S)
    for start in range(0, hi, BLOCK_N):
        keys = start + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + h * stride_kh + keys[:, None] * stride_ks + dims[None, :], mask=keys[:, None] < S,
                    other=0.0)
        v = tl.load(v_ptr + h * stride_vh + keys[:, None] * stride_vs + dims[None, :], mask=keys[:, None] < S,
                    other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale
        ok = keys[None, :] < S
        if CAUSAL:
            ok = ok & (keys[None, :] <= rows[:, None])
        s = tl.where(ok, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p, v)
        m_i = m_new
    tl.store(o_ptr + h * stride_oh + rows[:, None] * stride_os + dims[None, :], acc / l_i[:, None],
             mask=rows[:, None] < S)
