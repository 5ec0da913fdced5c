"""Autoregressive generation of one sequence, three ways: recompute the whole prefix every step (no cache), or keep
K and V in a contiguous cache, or in a paged cache; the tokens are the same, the work is not."""
from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from .kv_cache import ContiguousKVCache
from .model import TinyLlama
from .sampling import SamplingParams, sample
from .tokenizer import EOS

CACHES = ("none", "contiguous", "paged")


@dataclass(frozen=True)
class GenerationResult:
    """The new tokens (prompt excluded), how many forward passes made them, and the wall time they took."""

    tokens: list[int]
    forward_passes: int
    seconds: float


def generate(model: TinyLlama, prompt_ids: list[int], max_new_tokens: int, params: SamplingParams = SamplingParams(),
             *, cache: str = "contiguous", seed: int = 0, block_size: int = 16,
             stop_at_eos: bool = True) -> GenerationResult:
    """Generate up to `max_new_tokens` tokens after `prompt_ids` (stopping after EOS if `stop_at_eos`), sampling with
    `params` from a torch.Generator seeded with `seed`. cache "none" runs the model on the whole sequence every step;
    "contiguous" and "paged" prefill once, then feed one token per step."""
    if cache not in CACHES:
        raise ValueError(f"cache must be one of {CACHES}, got {cache!r}")
    prompt = [int(t) for t in prompt_ids]
    cfg = model.config
    if not prompt:
        raise ValueError("prompt_ids is empty: start it with at least BOS (ByteTokenizer().encode(text) does)")
    if max(prompt) >= cfg.vocab_size or min(prompt) < 0:
        raise ValueError(f"prompt ids must lie in 0..{cfg.vocab_size - 1}")
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    total = len(prompt) + max_new_tokens
    if total - 1 > cfg.max_seq_len:
        raise ValueError(f"prompt ({len(prompt)}) + max_new_tokens ({max_new_tokens}) needs {total - 1} positions; "
                         f"the model has max_seq_len={cfg.max_seq_len}")
    gen = torch.Generator().manual_seed(seed)
    device = next(model.parameters()).device
    out: list[int] = []
    passes = 0
    start = time.perf_counter()
    with torch.inference_mode():
        if cache == "none":
            kv = None
        elif cache == "contiguous":
            kv = ContiguousKVCache(cfg, max_seqs=1, max_len=total, device=device)
        else:
            from .paged import PagedKVCache
            kv = PagedKVCache(cfg, num_blocks=-(-total // block_size), block_size=block_size, device=device)
        seq = list(prompt)
        fed = 0                                            # tokens already in the cache
        while len(out) < max_new_tokens:
            if kv is None:
                tokens = torch.tensor([seq], device=device)
                logits = model(tokens)
            else:
                tokens = torch.tensor([seq[fed:]], device=device)
                positions = torch.arange(fed, len(seq), device=device)[None]
                logits = model(tokens, positions, cache=kv, seq_ids=[0])
                fed = len(seq)
            passes += 1
            nxt = int(sample(logits[0, -1].cpu(), params, gen))
            out.append(nxt)
            seq.append(nxt)
            if stop_at_eos and nxt == EOS:
                break
    return GenerationResult(tokens=out, forward_passes=passes, seconds=time.perf_counter() - start)
