"""A tiny Llama in plain torch, computed exactly as Hugging Face's `LlamaForCausalLM` computes it (so weights map 1:1).

RMSNorm in float32, RoPE with the rotate-half convention, a SwiGLU MLP, grouped-query attention (query head h reads
KV head h // (n_heads // n_kv_heads), as HF's `repeat_kv`), untied embedding and lm_head, no biases. Parameter names
follow HF's without the `model.` prefix. A KV cache plugs in through the `KVCache` protocol: each layer hands it
q and k (after RoPE) and v, and the cache stores k, v and returns the attention output.
"""
from __future__ import annotations

import functools
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import torch
from torch import nn

from .tokenizer import VOCAB_SIZE

DATA_DIR = Path(__file__).resolve().parent / "data"


@dataclass(frozen=True, kw_only=True)
class TinyConfig:
    """The shape of a tiny Llama: width, depth, heads (query and KV), head size, MLP width, context and RoPE base."""

    vocab_size: int = VOCAB_SIZE
    dim: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    ffn_dim: int
    max_seq_len: int = 512
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5

    def __post_init__(self) -> None:
        for name in ("vocab_size", "dim", "n_layers", "n_heads", "n_kv_heads", "head_dim", "ffn_dim", "max_seq_len"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) <= 0:
                raise ValueError(f"TinyConfig.{name} must be a positive int, got {getattr(self, name)!r}")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_heads ({self.n_heads}) must be a multiple of n_kv_heads ({self.n_kv_heads}) for GQA")
        if self.head_dim % 2:
            raise ValueError(f"head_dim ({self.head_dim}) must be even: RoPE rotates pairs of features")

    @property
    def group_size(self) -> int:
        """How many query heads share one KV head."""
        return self.n_heads // self.n_kv_heads


TARGET_CONFIG = TinyConfig(dim=128, n_layers=4, n_heads=4, n_kv_heads=2, head_dim=32, ffn_dim=352)
DRAFT_CONFIG = TinyConfig(dim=64, n_layers=2, n_heads=2, n_kv_heads=1, head_dim=32, ffn_dim=176)
CONFIGS = {"target": TARGET_CONFIG, "draft": DRAFT_CONFIG}


class KVCache(Protocol):
    """What a KV cache offers the model (kv_cache.py and paged.py implement it)."""

    def attend(self, layer: int, seq_ids: Sequence[int], positions: torch.Tensor, q: torch.Tensor,
               k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Store k, v [B, Hkv, T, D] of these tokens at these positions [B, T] for these sequences, then attend each
        query [B, Hq, T, D] to every cached token of its sequence whose position <= the query's: -> [B, Hq, T, D]."""
        ...

    def free(self, seq_id: int) -> None:
        """Forget a sequence and release its memory."""
        ...


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """weight * x / sqrt(mean(x^2) + eps) over the last axis, computed in float32 (as HF's LlamaRMSNorm)."""
    if x.dtype == torch.float32 and weight.dtype == torch.float32:   # torch's fused kernel: the same arithmetic
        return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, eps)
    xf = x.to(torch.float32)
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return weight * xf.to(x.dtype)


@functools.lru_cache(maxsize=16)
def _inv_freq(head_dim: int, theta: float) -> torch.Tensor:
    """theta^(-2i/D) for i < D/2, computed as HF computes it (kept: every decode step needs it)."""
    return 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).to(torch.float32) / head_dim))


def rope_cos_sin(positions: torch.Tensor, head_dim: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin [B, T, D] of RoPE's angles position * theta^(-2i/D), each frequency repeated for both halves."""
    if positions.ndim != 2:
        raise ValueError(f"positions must be [B, T], got shape {tuple(positions.shape)}")
    freqs = positions.to(torch.float32)[..., None] * _inv_freq(head_dim, float(theta)).to(positions.device)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x [B, H, T, D] rotated: x * cos + rotate_half(x) * sin, where rotate_half(x) = (-second half, first half)."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos[:, None] + rotated * sin[:, None]


def grouped_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """softmax(q k^T / sqrt(D)) v with grouped-query heads: q [B, Hq, T, D], k and v [B, Hkv, S, D], mask [B, T, S]
    (True = may attend) -> [B, Hq, T, D]. Query head h reads KV head h // (Hq // Hkv). Every cache uses this math."""
    if q.ndim != 4 or k.ndim != 4 or v.shape != k.shape:
        raise ValueError(f"grouped_attention wants q [B, Hq, T, D], k and v [B, Hkv, S, D]; got q {tuple(q.shape)}, "
                         f"k {tuple(k.shape)}, v {tuple(v.shape)}")
    b, hq, t, d = q.shape
    hkv, s = k.shape[1], k.shape[2]
    if k.shape[0] != b or k.shape[3] != d or hq % hkv:
        raise ValueError(f"q {tuple(q.shape)} and k {tuple(k.shape)} disagree: same B and D, and Hq a multiple of Hkv")
    if mask.shape != (b, t, s):
        raise ValueError(f"mask must be [B, T, S] = {(b, t, s)}, got {tuple(mask.shape)}")
    if q.dtype in (torch.float32, torch.float64) and k.dtype == v.dtype == q.dtype:
        # torch's fused kernel, the same math in one call (decode is overhead-bound); a query with no key gets 0
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None], enable_gqa=True)
    g = hq // hkv
    qg = q.reshape(b, hkv, g, t, d)                                     # head h = kv * g + j  ->  kv = h // g
    scores = torch.matmul(qg, k[:, :, None].transpose(-1, -2)) / math.sqrt(d)   # [B, Hkv, G, T, S]
    scores = scores.masked_fill(~mask[:, None, None], torch.finfo(scores.dtype).min)
    probs = torch.softmax(scores.to(torch.float32), dim=-1).to(q.dtype)
    return torch.matmul(probs, v[:, :, None]).reshape(b, hq, t, d)


class RMSNorm(nn.Module):
    """RMSNorm with a learned per-feature scale (weight starts at 1)."""

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, self.weight, self.eps)


class Attention(nn.Module):
    """The q, k, v and o projections of one layer (HF's names: q_proj, k_proj, v_proj, o_proj)."""

    def __init__(self, cfg: TinyConfig):
        super().__init__()
        self.q_proj = nn.Linear(cfg.dim, cfg.n_heads * cfg.head_dim, bias=False)
        self.k_proj = nn.Linear(cfg.dim, cfg.n_kv_heads * cfg.head_dim, bias=False)
        self.v_proj = nn.Linear(cfg.dim, cfg.n_kv_heads * cfg.head_dim, bias=False)
        self.o_proj = nn.Linear(cfg.n_heads * cfg.head_dim, cfg.dim, bias=False)


class MLP(nn.Module):
    """SwiGLU: down(silu(gate(x)) * up(x))."""

    def __init__(self, cfg: TinyConfig):
        super().__init__()
        self.gate_proj = nn.Linear(cfg.dim, cfg.ffn_dim, bias=False)
        self.up_proj = nn.Linear(cfg.dim, cfg.ffn_dim, bias=False)
        self.down_proj = nn.Linear(cfg.ffn_dim, cfg.dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(torch.nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    """Pre-norm attention then pre-norm MLP, each added to the residual stream."""

    def __init__(self, cfg: TinyConfig):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.mlp = MLP(cfg)


class TinyLlama(nn.Module):
    """The Llama architecture at toy size; `TinyLlama(config, seed=...)` is randomly initialised, `load_model` trained."""

    def __init__(self, config: TinyConfig, seed: int = 0):
        super().__init__()
        if not isinstance(config, TinyConfig):
            raise TypeError(f"TinyLlama takes a TinyConfig (e.g. TARGET_CONFIG), got {type(config).__name__}")
        self.config = config
        gen = torch.Generator().manual_seed(seed)
        self.embed_tokens = nn.Embedding(config.vocab_size, config.dim)
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.n_layers))
        self.norm = RMSNorm(config.dim, config.norm_eps)
        self.lm_head = nn.Linear(config.dim, config.vocab_size, bias=False)
        with torch.no_grad():   # seeded, independent of the global RNG; std 0.02 as HF's initializer_range
            for name, p in self.named_parameters():
                if not name.endswith("norm.weight"):
                    p.copy_(torch.randn(p.shape, generator=gen) * 0.02)

    def num_parameters(self) -> int:
        """The number of weights (embedding and lm_head counted separately: they are untied)."""
        return sum(p.numel() for p in self.parameters())

    def _fused_weights(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Layer i's q/k/v weights stacked into one matrix (with the rotated q and k rows, `_stack_qkv`) and gate/up
        into one [2 ffn, dim] (one matmul each instead of three and two). Without autograd they are kept, and rebuilt when a weight
        changes (its version counter or storage); with autograd they are stacked afresh (gradients flow)."""
        layer = self.layers[i]
        att, mlp = layer.self_attn, layer.mlp
        parts = (att.q_proj.weight, att.k_proj.weight, att.v_proj.weight, mlp.gate_proj.weight, mlp.up_proj.weight)
        if torch.is_grad_enabled():
            return self._stack_qkv(parts[:3]), torch.cat(parts[3:])
        stamp = tuple((p._version, p.data_ptr()) for p in parts)
        cache = self.__dict__.setdefault("_fused", {})
        if cache.get(i, (None,))[0] != stamp:
            with torch.no_grad():   # the detached views keep the storages alive, so an address is never reused
                cache[i] = (stamp, self._stack_qkv(parts[:3]), torch.cat(parts[3:]), [p.detach() for p in parts])
        return cache[i][1], cache[i][2]

    def _stack_qkv(self, qkv: Sequence[torch.Tensor]) -> torch.Tensor:
        """[Wq; Wk; Wv; R Wq; R Wk], where R is RoPE's rotate_half on each head's D rows (-second half, first
        half): the projection then also yields rotate_half(q) and rotate_half(k)."""
        d, half = self.config.head_dim, self.config.head_dim // 2

        def rotated(w: torch.Tensor) -> torch.Tensor:
            heads = w.view(-1, d, w.shape[-1])
            return torch.cat((-heads[:, half:], heads[:, :half]), dim=1).reshape(w.shape)

        return torch.cat((*qkv, rotated(qkv[0]), rotated(qkv[1])))

    def _rope_tables(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """RoPE's cos and sin [max_seq_len, D] for every position (`rope_cos_sin`), computed once per device."""
        tables = self.__dict__.setdefault("_rope", {})
        if device not in tables:
            cfg = self.config
            cos, sin = rope_cos_sin(torch.arange(cfg.max_seq_len, device=device)[None], cfg.head_dim, cfg.rope_theta)
            tables[device] = (cos[0], sin[0])
        return tables[device]

    def hidden(self, tokens: torch.Tensor, positions: torch.Tensor | None = None, cache: KVCache | None = None,
               seq_ids: Sequence[int] | None = None) -> torch.Tensor:
        """The final hidden states [B, T, dim] (after the final norm) of tokens [B, T] at positions [B, T].

        Without a cache, positions default to 0..T-1 and each token attends to the tokens of this call at positions
        <= its own. With a cache, positions are required and each layer calls `cache.attend`; seq_ids default to
        0..B-1."""
        cfg = self.config
        if tokens.ndim != 2:
            raise ValueError(f"tokens must be [B, T] token ids, got shape {tuple(tokens.shape)}")
        b, t = tokens.shape
        if positions is None:
            if cache is not None:
                raise ValueError("with a cache, pass positions [B, T]: where these tokens sit in their sequences")
            positions = torch.arange(t, device=tokens.device).expand(b, t)
        if positions.shape != tokens.shape:
            raise ValueError(f"positions {tuple(positions.shape)} must have the tokens' shape {tuple(tokens.shape)}")
        lo, hi = (int(p) for p in torch.aminmax(positions)) if t else (0, 0)
        if hi >= cfg.max_seq_len or lo < 0:
            raise ValueError(f"positions must lie in 0..max_seq_len-1 = {cfg.max_seq_len - 1}, got {lo}..{hi}")
        if cache is not None:
            seq_ids = list(range(b)) if seq_ids is None else list(seq_ids)
            if len(seq_ids) != b:
                raise ValueError(f"seq_ids has {len(seq_ids)} ids for a batch of {b}")
            mask = None
        else:
            mask = positions[:, :, None] >= positions[:, None, :]
        cos_table, sin_table = self._rope_tables(positions.device)
        cos, sin = cos_table[positions][:, :, None], sin_table[positions][:, :, None]  # [B, T, 1, D]: over heads
        x = self.embed_tokens(tokens)
        linear, eps = torch.nn.functional.linear, cfg.norm_eps
        hq, hkv, d = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
        for i, layer in enumerate(self.layers):      # the modules' weights used directly: decode is overhead-bound
            att = layer.self_attn
            w_qkv, w_gate_up = self._fused_weights(i)
            h = rms_norm(x, layer.input_layernorm.weight, eps)
            # q, k, v and rotate_half(q), rotate_half(k) as one matmul (the rotation folded into the weights)
            qkv = linear(h, w_qkv).view(b, t, 2 * (hq + hkv) + hkv, d)
            qk = qkv[:, :, :hq + hkv] * cos + qkv[:, :, hq + 2 * hkv:] * sin   # RoPE on q and k at once
            q, k = qk[:, :, :hq].transpose(1, 2), qk[:, :, hq:].transpose(1, 2)
            v = qkv[:, :, hq + hkv:hq + 2 * hkv].transpose(1, 2)
            if cache is None:
                a = grouped_attention(q, k, v, mask)
            else:
                a = cache.attend(i, seq_ids, positions, q, k, v)
            x = x + linear(a.transpose(1, 2).reshape(b, t, hq * d), att.o_proj.weight)
            h = rms_norm(x, layer.post_attention_layernorm.weight, eps)
            gate, up = linear(h, w_gate_up).chunk(2, dim=-1)
            x = x + linear(torch.nn.functional.silu(gate) * up, layer.mlp.down_proj.weight)
        return self.norm(x)

    def forward(self, tokens: torch.Tensor, positions: torch.Tensor | None = None, cache: KVCache | None = None,
                seq_ids: Sequence[int] | None = None) -> torch.Tensor:
        """Next-token logits [B, T, vocab] (float32) for tokens [B, T]; see `hidden` for positions and the cache."""
        return self.lm_head(self.hidden(tokens, positions, cache, seq_ids)).to(torch.float32)


META_KEY = "__meta__"


def save_weights(model: TinyLlama, path: str | Path, **meta: object) -> Path:
    """Write the model's weights as float16 arrays to an npz, with its config and `meta` as JSON under `__meta__`."""
    path = Path(path)
    arrays = {name: t.detach().to(torch.float16).cpu().numpy() for name, t in model.state_dict().items()}
    info = {"config": asdict(model.config), **meta}
    np.savez(path, **arrays, **{META_KEY: np.array(json.dumps(info, sort_keys=True))})
    return path


def load_weights(path: str | Path) -> tuple[TinyLlama, dict]:
    """The model stored in an npz by `save_weights` (weights as float32, eval mode) and its metadata."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: run `python -m infopt.llm.train` to regenerate the weights")
    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(str(data[META_KEY]))
        model = TinyLlama(TinyConfig(**meta["config"]))
        state = {k: torch.from_numpy(data[k].astype(np.float32)) for k in data.files if k != META_KEY}
    missing = set(model.state_dict()) ^ set(state)
    if missing:
        raise ValueError(f"{path} does not match its config: these weights are missing or extra: {sorted(missing)}")
    model.load_state_dict(state)
    return model.eval(), meta


def load_model(name: str, device: str | torch.device | None = None) -> TinyLlama:
    """The shipped trained model "target" or "draft" (from data/<name>.npz), in eval mode, on `device`."""
    if name not in CONFIGS:
        raise ValueError(f"load_model knows {sorted(CONFIGS)}, not {name!r}")
    model, _ = load_weights(DATA_DIR / f"{name}.npz")
    if model.config != CONFIGS[name]:
        raise ValueError(f"data/{name}.npz holds {model.config}, not {CONFIGS[name]}: regenerate it with "
                         "`python -m infopt.llm.train`")
    return model.to(device) if device is not None else model
