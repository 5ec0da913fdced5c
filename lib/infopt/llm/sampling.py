"""Turning logits into the next token: greedy, temperature, top-k and top-p (nucleus), with a seeded generator.

The order is Hugging Face's: temperature, then top-k, then top-p on what top-k kept. Temperature 0 means greedy
(a one-hot distribution on the argmax), so the same code path serves greedy and sampled decoding.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SamplingParams:
    """temperature 0 = greedy; top_k 0 = no top-k; top_p 1.0 = no nucleus cut."""

    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0

    def __post_init__(self) -> None:
        if not self.temperature >= 0:
            raise ValueError(f"temperature must be >= 0 (0 = greedy), got {self.temperature}")
        if not isinstance(self.top_k, int) or self.top_k < 0:
            raise ValueError(f"top_k must be an int >= 0 (0 = keep all), got {self.top_k!r}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1] (1 = keep all), got {self.top_p}")

    @property
    def greedy(self) -> bool:
        """Whether these parameters pick the argmax."""
        return self.temperature == 0


def processed_probs(logits, params: SamplingParams):
    """The distribution the sampler draws from, [..., V] float32: one-hot argmax at temperature 0; otherwise
    softmax(logits / T), then only the top_k most likely, then the smallest most-likely set with mass >= top_p,
    renormalized."""
    import torch

    logits = logits.to(torch.float32)
    vocab = logits.shape[-1]
    if params.greedy:
        return torch.nn.functional.one_hot(logits.argmax(-1), vocab).to(torch.float32)
    scaled = logits / params.temperature
    if 0 < params.top_k < vocab:
        kth = torch.topk(scaled, params.top_k, dim=-1).indices
        keep = torch.zeros_like(scaled, dtype=torch.bool).scatter_(-1, kth, True)
        scaled = scaled.masked_fill(~keep, float("-inf"))
    probs = torch.softmax(scaled, dim=-1)
    if params.top_p < 1:
        sorted_p, order = torch.sort(probs, dim=-1, descending=True)
        before = torch.cumsum(sorted_p, dim=-1) - sorted_p          # mass of the more likely tokens
        keep_sorted = before < params.top_p                          # the first token always stays
        keep = torch.zeros_like(keep_sorted).scatter_(-1, order, keep_sorted)
        probs = probs.masked_fill(~keep, 0.0)
        probs = probs / probs.sum(-1, keepdim=True)
    return probs


def sample(logits, params: SamplingParams, generator):
    """Token ids (LongTensor of shape logits.shape[:-1]) drawn from `processed_probs` with `generator` (a seeded
    torch.Generator); greedy takes the argmax and draws nothing."""
    import torch

    if params.greedy:
        return logits.argmax(-1)
    probs = processed_probs(logits, params)
    flat = probs.reshape(-1, probs.shape[-1])
    return torch.multinomial(flat, 1, generator=generator).reshape(probs.shape[:-1])
