def speculative_accept(draft_tokens: list[int], draft_probs: np.ndarray, target_probs: np.ndarray,
                       rng: np.random.Generator) -> list[int]:
    """Draws the bonus token from the last draft position's row p_{k-1}, not p_k."""
    vocab = target_probs.shape[1]
    out = []
    for i, x in enumerate(draft_tokens):
        if rng.random() < min(1.0, target_probs[i, x] / draft_probs[i, x]):
            out.append(int(x))
            continue
        residual = np.maximum(target_probs[i] - draft_probs[i], 0.0)
        out.append(int(rng.choice(vocab, p=residual / residual.sum())))
        return out
    out.append(int(rng.choice(vocab, p=target_probs[len(draft_tokens) - 1])))
    return out
