def speculative_accept(draft_tokens: list[int], draft_probs: np.ndarray, target_probs: np.ndarray,
                       rng: np.random.Generator) -> list[int]:
    """At a rejection, samples the replacement from the target p_i itself, not from the residual."""
    vocab = target_probs.shape[1]
    out = []
    for i, x in enumerate(draft_tokens):
        if rng.random() < min(1.0, target_probs[i, x] / draft_probs[i, x]):
            out.append(int(x))
            continue
        residual = target_probs[i].copy()
        out.append(int(rng.choice(vocab, p=residual / residual.sum())))
        return out
    out.append(int(rng.choice(vocab, p=target_probs[len(draft_tokens)])))
    return out
