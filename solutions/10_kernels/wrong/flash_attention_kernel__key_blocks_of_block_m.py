@triton.jit
def flash_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, stride_qh, stride_qs, stride_kh, stride_ks, stride_vh,
                           stride_vs, stride_oh, stride_os, S, scale, D: tl.constexpr, BLOCK_M: tl.constexpr,
                           BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    """Output rows pid_m*BLOCK_M .. of head program_id(1): softmax(q k^T * scale) v with the online softmax."""
    pid_m = tl.program_id(0)
    h = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, D)
    row_ok = rows < S
    q = tl.load(q_ptr + h * stride_qh + rows[:, None] * stride_qs + dims[None, :], mask=row_ok[:, None], other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    if CAUSAL:
        hi = tl.minimum((pid_m + 1) * BLOCK_M, S)
    else:
        hi = S
    for start in range(0, hi, BLOCK_M):          # square tiles: key blocks as large as the query block
        keys = start + tl.arange(0, BLOCK_M)
        key_ok = keys < S
        k = tl.load(k_ptr + h * stride_kh + keys[:, None] * stride_ks + dims[None, :], mask=key_ok[:, None],
                    other=0.0)
        v = tl.load(v_ptr + h * stride_vh + keys[:, None] * stride_vs + dims[None, :], mask=key_ok[:, None],
                    other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale
        allowed = key_ok[None, :]
        if CAUSAL:
            allowed = allowed & (keys[None, :] <= rows[:, None])
        s = tl.where(allowed, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        shift = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.exp(m_i - shift)
        p = tl.exp(s - shift[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p, v)
        m_i = m_new
    out = acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]
    tl.store(o_ptr + h * stride_oh + rows[:, None] * stride_os + dims[None, :], out, mask=row_ok[:, None])
