def paged_attention(q: torch.Tensor, k_blocks: torch.Tensor, v_blocks: torch.Tensor, table: list[int],
                    context_len: int) -> torch.Tensor:
    """One decode query [Hq, D] attending to its context_len tokens, read through the block table."""
    hq, d = q.shape
    hkv, bs = k_blocks.shape[1], k_blocks.shape[2]
    # every block of the table but the last is full; the last holds what is left of the context
    full = len(table) - 1
    last_fill = context_len - full * bs
    ks = [k_blocks[b] for b in table[:-1]] + [k_blocks[table[-1]][:, :last_fill]]
    vs = [v_blocks[b] for b in table[:-1]] + [v_blocks[table[-1]][:, :last_fill]]
    k = torch.cat(ks, dim=1)                                  # [Hkv, S, D]
    v = torch.cat(vs, dim=1)
    g = hq // hkv
    k = k.to(q.dtype).repeat_interleave(g, dim=0)             # [Hq, S, D]: head h reads KV head h // g
    v = v.to(q.dtype).repeat_interleave(g, dim=0)
    scores = (k @ q[:, :, None])[:, :, 0] / math.sqrt(d)      # [Hq, S]
    probs = torch.softmax(scores, dim=-1)
    return (probs[:, None, :] @ v)[:, 0, :]
