from infopt.kernels import attention as _attention


def online_softmax_update(m: torch.Tensor, l: torch.Tensor, acc: torch.Tensor, scores: torch.Tensor,
                          v: torch.Tensor, _fold=_attention.online_softmax_update
                          ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Fold one block of scores [R, C] and values [C, D] into the running (m [R], l [R], acc [R, D])."""
    return _fold(m, l, acc, scores, v)
