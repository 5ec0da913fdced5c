def speculative_accept(draft_tokens: list[int], draft_probs: np.ndarray, target_probs: np.ndarray,
                       rng: np.random.Generator) -> list[int]:
    """Builds the residual in the caller's target_probs row to save a copy."""
    vocab = target_probs.shape[1]
    out = []
    for i, x in enumerate(draft_tokens):
        if rng.random() < min(1.0, target_probs[i, x] / draft_probs[i, x]):
            out.append(int(x))
            continue
        residual = target_probs[i]
        residual -= draft_probs[i]
        np.maximum(residual, 0.0, out=residual)
        out.append(int(rng.choice(vocab, p=residual / residual.sum())))
        return out
    out.append(int(rng.choice(vocab, p=target_probs[len(draft_tokens)])))
    return out
