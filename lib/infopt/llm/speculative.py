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

import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch

from .kv_cache import ContiguousKVCache
from .model import TinyLlama
from .sampling import SamplingParams, processed_probs
from .tokenizer import EOS

__all__ = [
    "speculative_accept",
    "acceptance_probability",
    "expected_accepted",
    "IncrementalModel",
    "SpecResult",
    "speculative_generate",
    "compare_with_plain",
    "compare_runs",
    "draw_token",
    "check_generation_args",
    "EVAL_PROMPTS",
    "main",
]

# Prompts the figures are measured on (Python source, as the corpus; not cut from it).
EVAL_PROMPTS = ("def __init__(self, ", "import os\nimport sys\n\n", "class Foo:\n    def ", "    return ")


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


def draw_token(probs: np.ndarray, rng: np.random.Generator) -> int:
    """One token drawn from `probs` [V] (normalized in float64) with `rng.choice`."""
    probs = np.asarray(probs, dtype=np.float64)
    return int(rng.choice(len(probs), p=probs / probs.sum()))


class IncrementalModel:
    """One sequence run through a model with its own `ContiguousKVCache`: feed new tokens, count passes, roll back.

    `length` is how many positions (0..length-1) hold this sequence's K/V. `feed` writes the next tokens there in ONE
    forward pass; `rollback(n)` forgets positions >= n (rejected drafts): their slots keep stale K/V, which no query
    reads (a query attends only to positions <= its own, and the next `feed` rewrites positions n, n+1, ... before
    its queries attend), and the next feed overwrites them.
    """

    def __init__(self, model: TinyLlama, max_len: int, seq_id: int = 0):
        self.model = model
        self.cache = ContiguousKVCache(model.config, max_seqs=1, max_len=max_len)
        self.seq_id = seq_id
        self.length = 0
        self.passes = 0

    @torch.inference_mode()
    def feed(self, tokens: Sequence[int]) -> torch.Tensor:
        """Run tokens at positions length.. in one forward pass; -> final hidden states [T, dim] (after the norm)."""
        if len(tokens) == 0:
            raise ValueError("feed needs at least one token")
        ids = torch.tensor([list(tokens)], dtype=torch.long)
        positions = torch.arange(self.length, self.length + len(tokens))[None]
        hidden = self.model.hidden(ids, positions, self.cache, [self.seq_id])[0]
        self.length += len(tokens)
        self.passes += 1
        return hidden

    @torch.inference_mode()
    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The model's next-token logits (float32) for hidden states [..., dim] returned by `feed`."""
        return self.model.lm_head(hidden).to(torch.float32)

    def rollback(self, length: int) -> None:
        """Keep positions 0..length-1 only (drop the K/V of rejected drafts)."""
        if not 0 <= length <= self.length:
            raise ValueError(f"rollback to {length} is outside 0..{self.length} (the positions stored)")
        self.length = length
        self.cache.lengths[self.seq_id] = length


@dataclass
class SpecResult:
    """A speculative generation: the new tokens; forward passes of the target and of the drafter (prefill passes
    included; for MTP, head evaluations); per verification step the drafts proposed and accepted; their ratio;
    wall time."""

    tokens: list[int]
    target_passes: int
    draft_passes: int
    accepted_per_step: list[int]
    proposed_per_step: list[int]
    acceptance_rate: float
    seconds: float

    @property
    def tokens_per_target_pass(self) -> float:
        """Generated tokens per target forward pass (the prefill pass included): 1 for plain decoding."""
        return len(self.tokens) / max(1, self.target_passes)


def check_generation_args(models: Sequence[TinyLlama], prompt_ids: Sequence[int], max_new_tokens: int,
                          k: int) -> None:
    """ValueError unless the models share a vocabulary, the prompt is non-empty and in it, max_new_tokens >= 0,
    k >= 1, and everything fits the context."""
    vocabs = {m.config.vocab_size for m in models}
    if len(vocabs) != 1:
        raise ValueError(f"the models' vocabularies differ ({sorted(vocabs)}): draft and target must share one")
    if len(prompt_ids) == 0:
        raise ValueError("prompt_ids is empty: start it with BOS (ByteTokenizer().encode(text) does)")
    vocab = vocabs.pop()
    if not all(0 <= int(t) < vocab for t in prompt_ids):
        raise ValueError(f"prompt ids must lie in 0..{vocab - 1}")
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    if k < 1:
        raise ValueError(f"k (draft tokens per step) must be >= 1, got {k}")
    limit = min(m.config.max_seq_len for m in models)
    if len(prompt_ids) + max_new_tokens + k > limit:
        raise ValueError(f"prompt ({len(prompt_ids)}) + max_new_tokens ({max_new_tokens}) + k ({k}) exceeds the "
                         f"models' max_seq_len {limit}: shorten the prompt or generate fewer tokens")


def speculative_generate(target: TinyLlama, draft: TinyLlama, prompt_ids: Sequence[int], max_new_tokens: int,
                         k: int = 4, params: SamplingParams = SamplingParams(), seed: int = 0, *,
                         stop_at_eos: bool = True) -> SpecResult:
    """Generate with the draft proposing k tokens a step and the target verifying them in ONE pass.

    Both models keep a KV cache holding every committed token but the last. A step: the draft runs k passes
    (the first also catches it up on a bonus token it never saw), sampling x_i from its processed distribution
    q_i (`processed_probs`, the same temperature/top-k/top-p as the target); the target runs ONE pass over
    [last committed token, x_1..x_k], giving p_1..p_{k+1}; `speculative_accept` keeps a prefix and emits one more;
    both caches roll back past the rejected drafts. The output has the law of sampling the target with `params`;
    at temperature 0 it equals the target's greedy generation token for token. One numpy Generator (seeded with
    `seed`) draws the drafts and runs the accept rule. Near the end k shrinks so no more than max_new_tokens come.
    """
    check_generation_args((target, draft), prompt_ids, max_new_tokens, k)
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    prompt = [int(t) for t in prompt_ids]
    max_len = len(prompt) + max_new_tokens + k
    tgt, drf = IncrementalModel(target, max_len), IncrementalModel(draft, max_len)
    if len(prompt) > 1:                          # prefill: every prompt token but the last (fed with the drafts)
        tgt.feed(prompt[:-1])
        drf.feed(prompt[:-1])
    seq, out, accepted, proposed = list(prompt), [], [], []
    while len(out) < max_new_tokens:
        kk = min(k, max_new_tokens - len(out) - 1)
        drafts, q_rows, pending = [], [], seq[drf.length:]
        for _ in range(kk):
            q = processed_probs(drf.logits(drf.feed(pending)[-1]), params).double().numpy()
            drafts.append(draw_token(q, rng))
            q_rows.append(q)
            pending = drafts[-1:]
        hidden = tgt.feed(seq[tgt.length:] + drafts)
        p = processed_probs(tgt.logits(hidden), params).double().numpy()
        emitted = speculative_accept(drafts, np.array(q_rows) if q_rows else np.zeros((0, p.shape[1])), p, rng)
        n_acc = len(emitted) - 1
        tgt.rollback(len(seq) + n_acc)
        drf.rollback(min(drf.length, len(seq) + n_acc))
        accepted.append(n_acc)
        proposed.append(kk)
        seq += emitted
        out += emitted
        if stop_at_eos and EOS in emitted:
            out = out[: out.index(EOS) + 1]
            break
    return SpecResult(tokens=out, target_passes=tgt.passes, draft_passes=drf.passes, accepted_per_step=accepted,
                      proposed_per_step=proposed, acceptance_rate=sum(accepted) / max(1, sum(proposed)),
                      seconds=time.perf_counter() - start)


def compare_with_plain(target: TinyLlama, draft: TinyLlama, prompts: Sequence[Sequence[int]], max_new_tokens: int,
                       k: int = 4, params: SamplingParams = SamplingParams(), seed: int = 0,
                       repeats: int = 3) -> dict:
    """`speculative_generate` with this draft and k vs plain cached generation, side by side (`compare_runs`)."""
    def run(prompt: Sequence[int], run_seed: int) -> SpecResult:
        return speculative_generate(target, draft, prompt, max_new_tokens, k, params, run_seed)

    return {"k": k, **compare_runs(target, run, prompts, max_new_tokens, params, seed, repeats)}


def compare_runs(target: TinyLlama, speculate: Callable[[Sequence[int], int], SpecResult],
                 prompts: Sequence[Sequence[int]], max_new_tokens: int, params: SamplingParams = SamplingParams(),
                 seed: int = 0, repeats: int = 3) -> dict:
    """A speculative method `speculate(prompt, seed) -> SpecResult` vs plain cached generation of the target
    (`infopt.llm.generate.generate`), measured side by side on the same prompts (interleaved, best of `repeats`
    each): target passes, acceptance, tokens per target pass, wall time, and at temperature 0 whether the
    outputs are identical (they must be)."""
    from .generate import generate
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    plain_s, spec_s = [float("inf")] * len(prompts), [float("inf")] * len(prompts)
    plain_res: list = [None] * len(prompts)
    spec_res: list = [None] * len(prompts)
    for _ in range(repeats):
        for i, prompt in enumerate(prompts):
            plain_res[i] = generate(target, list(prompt), max_new_tokens, params, cache="contiguous", seed=seed + i)
            spec_res[i] = speculate(prompt, seed + i)
            plain_s[i] = min(plain_s[i], plain_res[i].seconds)
            spec_s[i] = min(spec_s[i], spec_res[i].seconds)
    plain_passes = sum(g.forward_passes for g in plain_res)
    target_passes = sum(s.target_passes for s in spec_res)
    tokens = sum(len(s.tokens) for s in spec_res)
    accepted = sum(sum(s.accepted_per_step) for s in spec_res)
    proposed = sum(sum(s.proposed_per_step) for s in spec_res)
    return {
        "temperature": params.temperature,
        "prompts": len(prompts),
        "tokens": tokens,
        "plain_target_passes": plain_passes,
        "spec_target_passes": target_passes,
        "spec_draft_passes": sum(s.draft_passes for s in spec_res),
        "target_pass_reduction": plain_passes / max(1, target_passes),
        "acceptance_rate": accepted / max(1, proposed),
        "mean_accepted_per_step": accepted / max(1, sum(len(s.accepted_per_step) for s in spec_res)),
        "tokens_per_target_pass": tokens / max(1, target_passes),
        "plain_seconds": sum(plain_s),
        "spec_seconds": sum(spec_s),
        "wall_speedup": sum(plain_s) / max(1e-12, sum(spec_s)),
        "identical_outputs": (all(g.tokens == s.tokens for g, s in zip(plain_res, spec_res))
                              if params.temperature == 0 else None),
    }


def main(argv: list[str] | None = None) -> list[dict]:
    """Print the draft-model comparison (`compare_with_plain`) for k = 2, 4, 6, greedy and at temperature 0.8."""
    import argparse
    import json

    from .model import load_model
    from .tokenizer import ByteTokenizer

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--tokens", type=int, default=96)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    target, draft = load_model("target"), load_model("draft")
    prompts = [ByteTokenizer().encode(text) for text in EVAL_PROMPTS]
    rows = []
    for temperature in (0.0, 0.8):
        for k in (2, 4, 6):
            row = compare_with_plain(target, draft, prompts, args.tokens, k, SamplingParams(temperature=temperature),
                                     repeats=args.repeats)
            rows.append(row)
            print(json.dumps({key: round(v, 3) if isinstance(v, float) else v for key, v in row.items()}))
    return rows


if __name__ == "__main__":
    main()
