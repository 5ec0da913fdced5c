def attend_with_cache(q: torch.Tensor, k_new: torch.Tensor, v_new: torch.Tensor, k_cache: torch.Tensor,
                      v_cache: torch.Tensor, pos: int) -> torch.Tensor:
    """Never checks that the tokens fit: torch complains about the shapes instead."""
    hq, t, d = q.shape
    hkv, max_len, dc = k_cache.shape
    if k_new.shape != (hkv, t, d) or v_new.shape != (hkv, t, d) or v_cache.shape != k_cache.shape or dc != d:
        raise ValueError(f"shapes disagree: q {tuple(q.shape)}, k_new {tuple(k_new.shape)}, v_new "
                         f"{tuple(v_new.shape)}, caches {tuple(k_cache.shape)} / {tuple(v_cache.shape)}")
    if hq % hkv:
        raise ValueError(f"Hq = {hq} is not a multiple of Hkv = {hkv}")
    k_cache[:, pos:pos + t] = k_new
    v_cache[:, pos:pos + t] = v_new
    n = pos + t
    group = hq // hkv
    keys = k_cache[:, :n].repeat_interleave(group, dim=0).to(q.dtype)       # [Hq, n, D]
    values = v_cache[:, :n].repeat_interleave(group, dim=0).to(q.dtype)
    scores = q @ keys.transpose(1, 2) / math.sqrt(d)                         # [Hq, T, n]
    allowed = torch.arange(n)[None, :] <= torch.arange(pos, n)[:, None]      # [T, n]
    scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.softmax(scores, dim=-1) @ values
