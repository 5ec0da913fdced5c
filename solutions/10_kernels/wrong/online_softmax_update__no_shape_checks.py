import torch


def online_softmax_update(m: torch.Tensor, l: torch.Tensor, acc: torch.Tensor, scores: torch.Tensor,
                          v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Checks no shapes: mismatched m, l, acc or v broadcast or fail with torch's own errors."""
    m_new = torch.maximum(m, scores.max(dim=1).values)
    shift = torch.where(torch.isneginf(m_new), torch.zeros_like(m_new), m_new)
    alpha = torch.exp(m - shift)
    p = torch.exp(scores - shift[:, None])
    return m_new, alpha * l + p.sum(dim=1), alpha[:, None] * acc + p @ v
