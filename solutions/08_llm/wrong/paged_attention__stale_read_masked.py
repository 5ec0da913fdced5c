def paged_attention(q: torch.Tensor, k_blocks: torch.Tensor, v_blocks: torch.Tensor, table: list[int],
                    context_len: int) -> torch.Tensor:
    """One decode query [Hq, D] attending to its context_len tokens, read through the block table."""
    hq, d = q.shape
    hkv, bs = k_blocks.shape[1], k_blocks.shape[2]
    nb = -(-context_len // bs)
    idx = torch.tensor(list(table[:nb]), dtype=torch.long)
    k = k_blocks[idx].permute(1, 0, 2, 3).reshape(hkv, nb * bs, d)   # whole blocks
    v = v_blocks[idx].permute(1, 0, 2, 3).reshape(hkv, nb * bs, d)
    g = hq // hkv
    k = k.to(q.dtype).repeat_interleave(g, dim=0)
    v = v.to(q.dtype).repeat_interleave(g, dim=0)
    scores = (k @ q[:, :, None])[:, :, 0] / math.sqrt(d)      # [Hq, nb * bs]
    scores[:, context_len:] = float("-inf")                   # the slots after the context do not count
    probs = torch.softmax(scores, dim=-1)
    return (probs[:, None, :] @ v)[:, 0, :]
