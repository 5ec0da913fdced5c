def online_softmax_update(m: torch.Tensor, l: torch.Tensor, acc: torch.Tensor, scores: torch.Tensor,
                          v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Fold one block of scores [R, C] and values [C, D] into the running (m [R], l [R], acc [R, D])."""
    if m.dim() != 1 or l.dim() != 1 or acc.dim() != 2 or scores.dim() != 2 or v.dim() != 2:
        raise ValueError(f"expected m [R], l [R], acc [R, D], scores [R, C], v [C, D]; got {tuple(m.shape)}, "
                         f"{tuple(l.shape)}, {tuple(acc.shape)}, {tuple(scores.shape)}, {tuple(v.shape)}")
    r, c = scores.shape
    if m.shape[0] != r or l.shape[0] != r or acc.shape[0] != r or v.shape[0] != c or acc.shape[1] != v.shape[1]:
        raise ValueError(f"shapes disagree: m {tuple(m.shape)}, l {tuple(l.shape)}, acc {tuple(acc.shape)}, "
                         f"scores {tuple(scores.shape)}, v {tuple(v.shape)}")
    block_max = scores.max(dim=1).values
    # the max did not grow in any row: keep the running max tensor as it is
    m_new = m if bool((block_max <= m).all()) else torch.maximum(m, block_max)
    shift = torch.where(torch.isneginf(m_new), torch.zeros_like(m_new), m_new)
    alpha = torch.exp(m - shift)
    p = torch.exp(scores - shift[:, None])
    l_new = alpha * l + p.sum(dim=1)
    acc_new = alpha[:, None] * acc + p @ v
    return m_new, l_new, acc_new
