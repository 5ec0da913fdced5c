import torch


def online_softmax_update(m: torch.Tensor, l: torch.Tensor, acc: torch.Tensor, scores: torch.Tensor,
                          v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Checks m's shape exactly but only len(l), so an l of shape [R, 1] goes through (and broadcasts)."""
    r, c = scores.shape
    if m.shape != (r,) or len(l) != r or acc.shape[0] != r or v.shape[0] != c or acc.shape[1] != v.shape[1]:
        raise ValueError("shapes disagree")
    m_new = torch.maximum(m, scores.max(dim=1).values)
    shift = torch.where(torch.isneginf(m_new), torch.zeros_like(m_new), m_new)
    alpha = torch.exp(m - shift)
    p = torch.exp(scores - shift[:, None])
    return m_new, alpha * l + p.sum(dim=1), alpha[:, None] * acc + p @ v
