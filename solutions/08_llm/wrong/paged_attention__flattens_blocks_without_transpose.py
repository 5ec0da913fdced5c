def paged_attention(q: torch.Tensor, k_blocks: torch.Tensor, v_blocks: torch.Tensor, table: list[int],
                    context_len: int) -> torch.Tensor:
    """Gathers the table's blocks and reshapes [n, Hkv, block_size, D] straight to [n * block_size, Hkv, D], mixing heads and slots."""
    hq, d = q.shape
    _, hkv, block_size, _ = k_blocks.shape
    index = torch.tensor(table, dtype=torch.long)
    keys = k_blocks[index].reshape(-1, hkv, d)[:context_len].transpose(0, 1)
    values = v_blocks[index].reshape(-1, hkv, d)[:context_len].transpose(0, 1)
    group = hq // hkv
    keys = keys.repeat_interleave(group, dim=0).to(q.dtype)          # [Hq, context_len, D]
    values = values.repeat_interleave(group, dim=0).to(q.dtype)
    scores = (keys @ q[:, :, None])[:, :, 0] / math.sqrt(d)         # [Hq, context_len]
    return (torch.softmax(scores, dim=-1)[:, None, :] @ values)[:, 0, :]
