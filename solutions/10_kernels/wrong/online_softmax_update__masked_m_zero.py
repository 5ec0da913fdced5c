import torch


def online_softmax_update(m: torch.Tensor, l: torch.Tensor, acc: torch.Tensor, scores: torch.Tensor,
                          v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Replaces a -inf running max by 0 to avoid -inf - -inf, so an all-masked row reports m = 0."""
    if scores.dim() != 2 or v.dim() != 2 or acc.dim() != 2 or m.dim() != 1 or l.dim() != 1:
        raise ValueError("expected m [R], l [R], acc [R, D], scores [R, C], v [C, D]")
    r, c = scores.shape
    if m.shape[0] != r or l.shape[0] != r or acc.shape[0] != r or v.shape[0] != c or acc.shape[1] != v.shape[1]:
        raise ValueError("shapes disagree")
    m_new = torch.maximum(m, scores.max(dim=1).values)
    m_new = torch.where(torch.isneginf(m_new), torch.zeros_like(m_new), m_new)   # avoid -inf - -inf
    alpha = torch.exp(m - m_new)
    p = torch.exp(scores - m_new[:, None])
    return m_new, alpha * l + p.sum(dim=1), alpha[:, None] * acc + p @ v
