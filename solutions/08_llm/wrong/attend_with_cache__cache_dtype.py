def attend_with_cache(q: torch.Tensor, k_new: torch.Tensor, v_new: torch.Tensor, k_cache: torch.Tensor,
                      v_cache: torch.Tensor, pos: int) -> torch.Tensor:
    """Store k_new/v_new at positions pos.. in the caches, then attend each query to positions 0..pos+t."""
    if q.ndim != 3 or k_new.ndim != 3 or v_new.ndim != 3 or k_cache.ndim != 3 or v_cache.ndim != 3:
        raise ValueError("q, k_new, v_new, k_cache and v_cache must all be 3-D")
    hq, t, d = q.shape
    hkv, max_len = k_cache.shape[0], k_cache.shape[1]
    if tuple(k_new.shape) != (hkv, t, d) or tuple(v_new.shape) != (hkv, t, d):
        raise ValueError(f"k_new and v_new must be [Hkv, T, D] = {(hkv, t, d)}, got {tuple(k_new.shape)}, "
                         f"{tuple(v_new.shape)}")
    if v_cache.shape != k_cache.shape:
        raise ValueError(f"v_cache {tuple(v_cache.shape)} must have the shape of k_cache {tuple(k_cache.shape)}")
    if k_cache.shape[2] != d:
        raise ValueError(f"the caches' D ({k_cache.shape[2]}) must be q's D ({d})")
    if hq % hkv:
        raise ValueError(f"Hq ({hq}) must be a multiple of Hkv ({hkv})")
    if pos + t > max_len:
        raise ValueError(f"pos + T = {pos + t} does not fit in the cache: max_len = {max_len}")
    k_cache[:, pos:pos + t] = k_new
    v_cache[:, pos:pos + t] = v_new
    n = pos + t
    g = hq // hkv
    k = k_cache[:, :n].repeat_interleave(g, dim=0)                   # compute in the cache's dtype
    v = v_cache[:, :n].repeat_interleave(g, dim=0)
    qc = q.to(k_cache.dtype)
    scores = qc @ k.transpose(-1, -2) / math.sqrt(d)
    qpos = torch.arange(pos, n)
    allowed = torch.arange(n)[None, :] <= qpos[:, None]
    scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
