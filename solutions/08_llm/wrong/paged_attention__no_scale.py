def paged_attention(q: torch.Tensor, k_blocks: torch.Tensor, v_blocks: torch.Tensor, table: list[int],
                    context_len: int) -> torch.Tensor:
    """Forgets the 1/sqrt(D) scale of the scores."""
    hq, d = q.shape
    _, hkv, block_size, _ = k_blocks.shape
    idx = torch.arange(context_len)
    blocks = torch.tensor(table, dtype=torch.long)[idx // block_size]
    slots = idx % block_size
    keys = k_blocks[blocks, :, slots].transpose(0, 1)               # [Hkv, context_len, D]
    values = v_blocks[blocks, :, slots].transpose(0, 1)
    group = hq // hkv
    keys = keys.repeat_interleave(group, dim=0).to(q.dtype)          # [Hq, context_len, D]
    values = values.repeat_interleave(group, dim=0).to(q.dtype)
    scores = (keys @ q[:, :, None])[:, :, 0]         # [Hq, context_len]
    return (torch.softmax(scores, dim=-1)[:, None, :] @ values)[:, 0, :]
