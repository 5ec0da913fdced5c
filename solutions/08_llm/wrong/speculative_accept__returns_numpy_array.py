def speculative_accept(draft_tokens: list[int], draft_probs: np.ndarray, target_probs: np.ndarray,
                       rng: np.random.Generator) -> list[int]:
    """Right tokens, returned as a numpy array (built with np.append)."""
    vocab = target_probs.shape[1]
    out = np.array([], dtype=np.int64)
    for i, x in enumerate(draft_tokens):
        if rng.random() < min(1.0, target_probs[i, x] / draft_probs[i, x]):
            out = np.append(out, x)
            continue
        residual = np.maximum(target_probs[i] - draft_probs[i], 0.0)
        out = np.append(out, rng.choice(vocab, p=residual / residual.sum()))
        return out
    out = np.append(out, rng.choice(vocab, p=target_probs[len(draft_tokens)]))
    return out
