def paged_attention(q: torch.Tensor, k_blocks: torch.Tensor, v_blocks: torch.Tensor, table: list[int],
                    context_len: int) -> torch.Tensor:
    """One decode query [Hq, D] attending to its context_len tokens, read through the block table."""
    hq, d = q.shape
    hkv, bs = k_blocks.shape[1], k_blocks.shape[2]
    blocks = torch.tensor([table[i // bs] for i in range(context_len)], dtype=torch.long)
    slots = torch.arange(context_len) % bs
    k = k_blocks[blocks, :, slots].transpose(0, 1)            # [Hkv, S, D]
    v = v_blocks[blocks, :, slots].transpose(0, 1)
    g = hq // hkv
    k = k.to(q.dtype).repeat_interleave(g, dim=0)
    v = v.to(q.dtype).repeat_interleave(g, dim=0)
    scores = (k @ q[:, :, None])[:, :, 0] / math.sqrt(d)
    w = torch.exp(scores)
    w = w / w.sum(dim=-1, keepdim=True)
    return (w[:, None, :] @ v)[:, 0, :]
