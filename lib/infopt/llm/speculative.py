"""Speculative decoding: a cheap proposer drafts k tokens, the target verifies them in ONE forward pass.

The accept/reject rule (`speculative_accept`, Leviathan et al. 2023 / Chen et al. 2023) keeps the output
distribution exactly the target's: draft token x drawn from q is kept with probability min(1, p(x) / q(x));
at the first rejection a token is drawn from the residual normalize(max(0, p - q)); if all k are kept a bonus
token is drawn from the target's next distribution. Each target pass therefore yields 1..k+1 tokens. Per
position the acceptance probability is beta = sum_x min(p(x), q(x)) = 1 - TV(p, q), and with independent
positions the expected number of accepted drafts per step is sum_{i=1..k} prod_{j<=i} beta_j.

`speculative_generate` runs it with the tiny draft model (`infopt.llm.model.load_model("draft")`) against the
target, each with its own `ContiguousKVCache`. Rejected drafts are "rolled back" by moving the valid length
back: their cache slots hold stale K/V, which no query attends to (a query only reads positions <= its own, and
every position between the valid length and the query was rewritten in the same pass before attending).

How the real systems name this (checked against their documentation):
- Hugging Face transformers: `model.generate(..., assistant_model=draft)` ("assisted generation" / assisted
  decoding); `prompt_lookup_num_tokens=` is its n-gram (prompt lookup) proposer.
- vLLM: `LLM(..., speculative_config={"method": ..., "num_speculative_tokens": k})` with methods
  "draft_model" (a separate small model, as here), "ngram" (prompt lookup), "eagle" / "eagle3", "medusa",
  "mtp" (DeepSeek-style multi-token-prediction layers, see `infopt.llm.mtp`), and others.
- TensorRT-LLM: `speculative_config=DraftTargetDecodingConfig(max_draft_len=k, ...)`, `NGramDecodingConfig`,
  `Eagle3DecodingConfig`, `MTPDecodingConfig(num_nextn_predict_layers=...)`.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = [
    "speculative_accept",
    "acceptance_probability",
    "expected_accepted",
    "IncrementalModel",
    "SpecResult",
    "speculative_generate",
    "compare_with_plain",
]


def _as_probs(name: str, probs, rows: int) -> np.ndarray:
    """`probs` as a float64 [rows, V] array of finite non-negative entries, or a ValueError naming `name`."""
    arr = np.asarray(probs, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] != rows:
        raise ValueError(f"{name} must have shape [{rows}, V]; got {list(arr.shape)}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"{name} must hold finite, non-negative probabilities")
    if np.any(arr.sum(axis=1) <= 0):
        raise ValueError(f"every row of {name} must have positive mass")
    return arr


def speculative_accept(draft_tokens: Sequence[int], draft_probs, target_probs,
                       rng: np.random.Generator) -> list[int]:
    """Speculative sampling's accept/reject step: returns the 1..k+1 tokens it emits.

    draft_tokens: k proposed ids, x_i drawn from draft_probs[i] (q_i). target_probs: [k + 1, V], p_i for the
    same positions plus p_k for the token after the last draft. The rng is consumed in exactly this order:
    for i = 0, 1, ...: one `u = rng.random()` (always, even when p_i(x) >= q_i(x)); keep x_i iff
    u < p_i(x_i) / q_i(x_i); at the first rejection emit `int(rng.choice(V, p=r))` with
    r = max(0, p_i - q_i) / sum(max(0, p_i - q_i)) and stop; if all k are kept emit
    `int(rng.choice(V, p=p_k / sum(p_k)))`. (If the residual has no mass, p_i == q_i and a rejection has
    probability 0; rounding can still produce one, and then r = p_i / sum(p_i).)
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator (np.random.default_rng(seed)); "
                        f"got {type(rng).__name__}")
    tokens = [int(t) for t in draft_tokens]
    k = len(tokens)
    p = _as_probs("target_probs", target_probs, k + 1)
    q = _as_probs("draft_probs", draft_probs, k)
    vocab = p.shape[1]
    if q.shape[1] != vocab:
        raise ValueError(f"draft_probs has vocabulary {q.shape[1]} but target_probs has {vocab}")
    for i, x in enumerate(tokens):
        if not 0 <= x < vocab:
            raise ValueError(f"draft token {x} at position {i} is outside the vocabulary 0..{vocab - 1}")
        if q[i, x] <= 0:
            raise ValueError(f"draft token {x} at position {i} has draft probability 0: it cannot have been "
                             "drawn from draft_probs (pass the distribution the draft actually sampled from)")
    emitted: list[int] = []
    for i, x in enumerate(tokens):
        u = rng.random()
        if u < p[i, x] / q[i, x]:
            emitted.append(x)
            continue
        residual = np.maximum(p[i] - q[i], 0.0)
        mass = residual.sum()
        if mass <= 0:
            residual, mass = p[i], p[i].sum()
        emitted.append(int(rng.choice(vocab, p=residual / mass)))
        return emitted
    emitted.append(int(rng.choice(vocab, p=p[k] / p[k].sum())))
    return emitted


def acceptance_probability(target_probs, draft_probs) -> np.ndarray:
    """beta_i = sum_x min(p_i(x), q_i(x)): the chance that a draft token drawn from q_i is kept (per row)."""
    p = np.atleast_2d(np.asarray(target_probs, dtype=np.float64))
    q = np.atleast_2d(np.asarray(draft_probs, dtype=np.float64))
    if p.shape != q.shape:
        raise ValueError(f"target_probs {list(p.shape)} and draft_probs {list(q.shape)} must have the same shape")
    return np.minimum(p, q).sum(axis=-1)


def expected_accepted(betas: Sequence[float]) -> float:
    """E[accepted drafts per step] = sum_{i=1..k} prod_{j<=i} beta_j, for independent per-position acceptance."""
    return float(np.cumprod(np.asarray(betas, dtype=np.float64)).sum())
