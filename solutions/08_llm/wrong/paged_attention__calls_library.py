def paged_attention(q: torch.Tensor, k_blocks: torch.Tensor, v_blocks: torch.Tensor, table: list[int],
                    context_len: int) -> torch.Tensor:
    """Gathers with the library and lets its attention do the rest."""
    from infopt.llm.paged import gather_kv

    keys, values = gather_kv(k_blocks, table, context_len), gather_kv(v_blocks, table, context_len)
    group = q.shape[0] // keys.shape[0]
    scores = (keys.repeat_interleave(group, 0) @ q[:, :, None])[:, :, 0] / math.sqrt(q.shape[1])
    return (torch.softmax(scores, dim=-1)[:, None, :] @ values.repeat_interleave(group, 0))[:, 0, :]
