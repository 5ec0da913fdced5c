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
    m_new = torch.maximum(m, scores.max(dim=1).values)
    dead = torch.isneginf(m_new)
    # exp(m - m') = exp(m) / exp(m'); rows that saw only -inf get 0 instead of 0 / 0
    e_new = torch.exp(m_new)
    alpha = torch.where(dead, torch.zeros_like(m), torch.exp(m) / e_new)
    p = torch.where(dead[:, None], torch.zeros_like(scores), torch.exp(scores) / e_new[:, None])
    l_new = alpha * l + p.sum(dim=1)
    acc_new = alpha[:, None] * acc + p @ v
    return m_new, l_new, acc_new
