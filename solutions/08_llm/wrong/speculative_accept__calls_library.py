def speculative_accept(draft_tokens: list[int], draft_probs: np.ndarray, target_probs: np.ndarray,
                       rng: np.random.Generator) -> list[int]:
    """Hands the step to the library."""
    from infopt.llm.speculative import speculative_accept as library_step
    return library_step(draft_tokens, draft_probs, target_probs, rng)
