"""Memory arithmetic of real models: KV-cache bytes, weight bytes, and what fits on one GPU.

The real models are data (`MODELS`), their numbers taken from the published config files (each `ModelSpec.source`
names where; a comment says where a figure could not be checked). `kv_cache_bytes` is Exercise 6's reference:
  - GQA:  2 (K and V) * layers * kv_heads * head_dim * bytes * tokens,
  - MLA:  (kv_lora_rank + qk_rope_head_dim) * layers * bytes * tokens (one latent per token, no factor 2),
  - a sliding-window layer stores min(context, window) tokens, a global one all of them; everything times batch.
`TINY` holds the same specs for the course's tiny models (from `infopt.llm.model`), so the formula can be checked
against the bytes `ContiguousKVCache` / `PagedKVCache` really allocate. No torch is imported unless TINY is read.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

__all__ = ["ModelSpec", "MODELS", "DTYPE_BYTES", "GPUS", "CONTEXTS", "kv_cache_bytes", "weight_bytes",
           "dtype_bytes", "max_context", "fits_table", "max_context_table", "kv_memory_figure", "spec_from_tiny",
           "gqa_param_count", "describe", "TINY"]

DTYPE_BYTES: dict[str, float] = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int4": 0.5}

# GPU memory in (decimal) bytes as the products are sold: A100/H100 80 GB, H200 141 GB. A serving engine keeps some
# of it for activations, the CUDA context and fragmentation; `max_context` takes a `reserve` fraction for that.
GPUS: dict[str, float] = {"80 GB (H100)": 80e9, "141 GB (H200)": 141e9}

CONTEXTS: tuple[int, ...] = tuple(2 ** k for k in range(12, 21))   # 4K, 8K, ..., 1M tokens

ATTENTION_KINDS = ("gqa", "mla")


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    """The numbers of one model that size its memory: depth, heads, KV heads, head size, width, parameter counts,
    experts, the attention kind ("gqa" or "mla" with its latent sizes) and sliding-window layers, and the source."""

    name: str
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    hidden: int
    params_b: float                      # total parameters, billions
    active_params_b: float               # parameters one token runs through (= params_b for a dense model)
    experts: int = 0                     # routed experts per MoE layer (0: dense)
    experts_active: int = 0              # routed experts each token goes to (top-k)
    attention: str = "gqa"
    kv_lora_rank: int = 0                # MLA: width of the compressed KV latent c_KV
    qk_rope_head_dim: int = 0            # MLA: width of the decoupled RoPE key, cached beside the latent
    sliding_window: int = 0              # tokens a local layer attends to (0: none)
    local_layers: int = 0                # how many layers are sliding-window (local) layers
    source: str = ""
    # Additions beyond the shared plan (used by gqa_param_count and parallel.py's expert-parallel count):
    vocab_size: int = 0
    ffn_dim: int = 0                     # the dense MLP's width
    moe_ffn_dim: int = 0                 # one expert's MLP width
    shared_experts: int = 0              # experts every token goes to (DeepSeek's shared expert)
    dense_layers: int = 0                # MoE models: the first layers that keep a dense MLP
    tied_embeddings: bool = False

    def __post_init__(self) -> None:
        for f in ("n_layers", "n_heads", "n_kv_heads", "head_dim", "hidden"):
            v = getattr(self, f)
            if not isinstance(v, int) or v <= 0:
                raise ValueError(f"ModelSpec {self.name!r}: {f} must be a positive int, got {v!r}")
        if self.attention not in ATTENTION_KINDS:
            raise ValueError(f"ModelSpec {self.name!r}: attention must be one of {ATTENTION_KINDS}, "
                             f"got {self.attention!r}")
        if self.attention == "mla" and (self.kv_lora_rank <= 0 or self.qk_rope_head_dim < 0):
            raise ValueError(f"ModelSpec {self.name!r}: MLA needs kv_lora_rank > 0 and qk_rope_head_dim >= 0")
        if not 0 <= self.local_layers <= self.n_layers:
            raise ValueError(f"ModelSpec {self.name!r}: local_layers ({self.local_layers}) must lie in "
                             f"0..n_layers ({self.n_layers})")
        if self.local_layers and self.sliding_window <= 0:
            raise ValueError(f"ModelSpec {self.name!r}: {self.local_layers} local layers need sliding_window > 0")
        if self.experts_active > self.experts:
            raise ValueError(f"ModelSpec {self.name!r}: experts_active ({self.experts_active}) > experts "
                             f"({self.experts})")
        if not 0 < self.active_params_b <= self.params_b:
            raise ValueError(f"ModelSpec {self.name!r}: need 0 < active_params_b <= params_b, got "
                             f"{self.active_params_b} and {self.params_b}")

    @property
    def is_moe(self) -> bool:
        """True for a mixture-of-experts model."""
        return self.experts > 0

    @property
    def moe_layers(self) -> int:
        """Layers whose MLP is a mixture of experts."""
        return self.n_layers - self.dense_layers if self.is_moe else 0


# --- The real models. Figures are the published config fields. huggingface.co cannot be reached from this machine:
# each figure was read from a public copy of the config (or the authors' own code) named in `source`. -------------
MODELS: dict[str, ModelSpec] = {s.name: s for s in [
    ModelSpec(
        name="Llama 3 8B", n_layers=32, n_heads=32, n_kv_heads=8, head_dim=128, hidden=4096,
        # 8.03B = 8,030,261,248, which gqa_param_count reproduces exactly from these fields
        params_b=8.03, active_params_b=8.03, vocab_size=128256, ffn_dim=14336,
        source="huggingface.co/meta-llama/Meta-Llama-3-8B config.json (num_hidden_layers 32, num_attention_heads 32, "
               "num_key_value_heads 8, hidden_size 4096, intermediate_size 14336, vocab_size 128256), read from "
               "copies: Meta's params.json (dim 4096, n_layers 32, n_heads 32, n_kv_heads 8) as stored under "
               "meta-llama/llama3: Meta-Llama-3-8B-Instruct/params.json (the index's copy of that repository mixes "
               "in forks' files, so this may be a fork's) and vulkomilev/oumi: configs/recipes/llama3_1/README.md"),
    ModelSpec(
        name="Llama 3 70B", n_layers=80, n_heads=64, n_kv_heads=8, head_dim=128, hidden=8192,
        # 70.55B is what gqa_param_count gives from these fields (the model card says "70B")
        params_b=70.55, active_params_b=70.55, vocab_size=128256, ffn_dim=28672,
        source="huggingface.co/meta-llama/Meta-Llama-3-70B config.json (num_hidden_layers 80, num_attention_heads "
               "64, num_key_value_heads 8, hidden_size 8192, intermediate_size 28672), read from copies: "
               "meta-llama/llama3: Meta-Llama-3-70B/params.json (same caveat as the 8B's) and "
               "vulkomilev/oumi: configs/recipes/llama3_1/README.md"),
    ModelSpec(
        name="Qwen3 8B", n_layers=36, n_heads=32, n_kv_heads=8, head_dim=128, hidden=4096,
        # 8.19B is gqa_param_count's figure (QK-norms aside); the model card's "8.2B" was not checked here
        params_b=8.19, active_params_b=8.19, vocab_size=151936, ffn_dim=12288,
        source="huggingface.co/Qwen/Qwen3-8B config.json (num_hidden_layers 36, num_attention_heads 32, "
               "num_key_value_heads 8, head_dim 128, hidden_size 4096, intermediate_size 12288, "
               "tie_word_embeddings false), read from the copy in Chen-Oliver/qwen3-8b-base: config.json"),
    ModelSpec(
        name="Qwen3 235B-A22B", n_layers=94, n_heads=64, n_kv_heads=4, head_dim=128, hidden=4096,
        params_b=235.0, active_params_b=22.0,            # the model's name; gqa_param_count gives 235.1 and 22.2
        experts=128, experts_active=8, vocab_size=151936, moe_ffn_dim=1536, ffn_dim=12288,
        source="huggingface.co/Qwen/Qwen3-235B-A22B config.json (num_hidden_layers 94, num_attention_heads 64, "
               "num_key_value_heads 4, head_dim 128, hidden_size 4096, num_experts 128, num_experts_per_tok 8, "
               "moe_intermediate_size 1536, decoder_sparse_step 1, mlp_only_layers []), read from the Megatron "
               "arguments that mirror it in zyzshishui/slime: scripts/models/qwen3-235B-A22B.sh (num-layers 94, "
               "num-attention-heads 64, num-query-groups 4, kv-channels 128, num-experts 128, moe-router-topk 8, "
               "moe-ffn-hidden-size 1536) and copies of the JSON quoted in other repositories"),
    ModelSpec(
        name="Gemma 3 27B", n_layers=62, n_heads=32, n_kv_heads=16, head_dim=128, hidden=5376,
        # 62 layers in the pattern (5 local, 1 global) repeated: layers 5, 11, ..., 59 are global -> 10 global,
        # 52 local with a 1024-token window.
        sliding_window=1024, local_layers=52,
        # The text model; gqa_param_count gives 27.0B (norms aside). The released checkpoint adds a ~0.4B SigLIP
        # vision tower: not counted here, and the 0.4B is not verified.
        params_b=27.0, active_params_b=27.0, vocab_size=262144, ffn_dim=21504, tied_embeddings=True,
        source="google/gemma_pytorch: gemma/config.py get_config_for_27b_v3 (num_hidden_layers 62, "
               "num_attention_heads 32, num_key_value_heads 16, head_dim 128, hidden_size 5376, intermediate_size "
               "5376*8//2, attn_types 5 LOCAL_SLIDING + 1 GLOBAL, sliding_window_size 1024), Google's own code; "
               "copies of HF's config.json quoted elsewhere agree (sliding_window 1024, sliding_window_pattern 6; "
               "HF pads the vocabulary to 262208)"),
    ModelSpec(
        name="DeepSeek-V3", n_layers=61, n_heads=128,
        # MLA caches no per-head K/V: n_kv_heads and head_dim (qk_nope 128 + qk_rope 64 = 192 for q and k; v is 128)
        # do not enter its KV formula. They are what an uncompressed MHA cache of the same model would store.
        n_kv_heads=128, head_dim=192, hidden=7168,
        attention="mla", kv_lora_rank=512, qk_rope_head_dim=64,
        experts=256, experts_active=8, shared_experts=1, dense_layers=3, moe_ffn_dim=2048, ffn_dim=18432,
        vocab_size=129280,
        params_b=671.0, active_params_b=37.0,   # README: 671B total, 37B activated per token (without the MTP module)
        source="deepseek-ai/DeepSeek-V3: inference/configs/config_671B.json (n_layers 61, n_dense_layers 3, "
               "n_heads 128, dim 7168, kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128, "
               "n_routed_experts 256, n_shared_experts 1, n_activated_experts 8, moe_inter_dim 2048); parameter "
               "counts from its README.md (671B total, 37B activated; 685B on HF with the 14B MTP module)"),
]}


def dtype_bytes(dtype: str, what: str = "dtype") -> float:
    """Bytes per element of a dtype name in DTYPE_BYTES ("fp16" -> 2); a clear error for any other name."""
    if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:
        raise ValueError(f"{what} must be one of {sorted(DTYPE_BYTES)}, got {dtype!r}")
    return DTYPE_BYTES[dtype]


def _check_spec(spec: Any) -> None:
    if not isinstance(spec, ModelSpec):
        raise TypeError(f"expected a ModelSpec (e.g. MODELS['Llama 3 8B']), got {type(spec).__name__}")


def kv_cache_bytes(spec: ModelSpec, context_len: int, dtype: str, batch: int = 1) -> float:
    """KV-cache bytes of `batch` sequences of `context_len` tokens each (Exercise 6's reference).

    GQA: 2 * n_layers * n_kv_heads * head_dim * bytes * tokens; MLA: (kv_lora_rank + qk_rope_head_dim) * n_layers *
    bytes * tokens; a sliding-window layer stores min(context_len, sliding_window) tokens; times batch."""
    _check_spec(spec)
    if isinstance(context_len, bool) or not isinstance(context_len, int) or context_len < 0:
        raise ValueError(f"context_len must be an int >= 0 (tokens per sequence), got {context_len!r}")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be an int >= 1 (sequences), got {batch!r}")
    b = dtype_bytes(dtype)
    if spec.attention == "mla":
        return float((spec.kv_lora_rank + spec.qk_rope_head_dim) * spec.n_layers * b * context_len * batch)
    local = spec.local_layers
    tokens_per_layer = (spec.n_layers - local) * context_len + local * min(context_len, spec.sliding_window)
    return float(2 * spec.n_kv_heads * spec.head_dim * b * tokens_per_layer * batch)


def weight_bytes(spec: ModelSpec, dtype: str) -> float:
    """Bytes of all the weights (every expert of a MoE model must be resident): params_b * 1e9 * bytes."""
    _check_spec(spec)
    return spec.params_b * 1e9 * dtype_bytes(dtype)


def max_context(spec: ModelSpec, gpu_bytes: float, dtype: str, batch: int = 1, weights_dtype: str | None = None,
                reserve: float = 0.0) -> int:
    """The longest context (tokens per sequence, for `batch` sequences) whose KV cache at `dtype` fits beside the
    weights at `weights_dtype` (default: `dtype`) in (1 - reserve) * gpu_bytes; 0 when the weights alone do not fit.
    Capped at 2**40 tokens (a model whose every layer is sliding-window would otherwise fit any context). Memory
    only: the context the model was trained for (max_position_embeddings) is another limit."""
    _check_spec(spec)
    if not 0.0 <= reserve < 1.0:
        raise ValueError(f"reserve is the fraction of the GPU kept for other things, in [0, 1); got {reserve!r}")
    if gpu_bytes <= 0:
        raise ValueError(f"gpu_bytes must be > 0, got {gpu_bytes!r}")
    budget = gpu_bytes * (1.0 - reserve) - weight_bytes(spec, weights_dtype or dtype)
    if budget < kv_cache_bytes(spec, 1, dtype, batch):
        return 0
    lo, hi, cap = 1, 2, 2 ** 40
    while hi < cap and kv_cache_bytes(spec, hi, dtype, batch) <= budget:
        lo, hi = hi, hi * 2
    if hi >= cap and kv_cache_bytes(spec, cap, dtype, batch) <= budget:
        return cap
    while hi - lo > 1:                      # kv(lo) fits, kv(hi) does not
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if kv_cache_bytes(spec, mid, dtype, batch) <= budget else (lo, mid)
    return lo


def _models(models: Iterable[ModelSpec | str] | None) -> list[ModelSpec]:
    out = []
    for m in (MODELS.values() if models is None else models):
        if isinstance(m, str):
            if m not in MODELS:
                raise ValueError(f"unknown model {m!r}; MODELS has {sorted(MODELS)}")
            m = MODELS[m]
        _check_spec(m)
        out.append(m)
    return out


def fits_table(models: Iterable[ModelSpec | str] | None = None, dtypes: Sequence[str] = ("fp16", "fp8", "int4"),
               contexts: Sequence[int] = CONTEXTS, batch: int = 1,
               gpus: Mapping[str, float] = GPUS) -> list[dict[str, Any]]:
    """One row per (model, dtype, context): KV bytes per token and per sequence, weight bytes, their total (weights
    and KV both at that dtype), and for each GPU whether it fits (`fits <gpu>`: True / False)."""
    rows = []
    for spec in _models(models):
        for dt in dtypes:
            w = weight_bytes(spec, dt)
            for ctx in contexts:
                kv = kv_cache_bytes(spec, ctx, dt, batch)
                row = {"model": spec.name, "dtype": dt, "context": ctx, "batch": batch,
                       "kv_bytes_per_token": kv / (ctx * batch) if ctx else 0.0,
                       "kv_gb": kv / 1e9, "weights_gb": w / 1e9, "total_gb": (kv + w) / 1e9}
                for name, cap in gpus.items():
                    row[f"fits {name}"] = kv + w <= cap
                rows.append(row)
    return rows


def max_context_table(models: Iterable[ModelSpec | str] | None = None,
                      dtypes: Sequence[str] = ("fp16", "fp8", "int4"), batch: int = 1,
                      gpus: Mapping[str, float] = GPUS) -> list[dict[str, Any]]:
    """One row per (model, dtype): the weights' size and the longest context that fits on each GPU
    (`max context <gpu>`, tokens; 0 = the weights alone do not fit)."""
    rows = []
    for spec in _models(models):
        for dt in dtypes:
            row = {"model": spec.name, "dtype": dt, "batch": batch, "weights_gb": weight_bytes(spec, dt) / 1e9}
            for name, cap in gpus.items():
                row[f"max context {name}"] = max_context(spec, cap, dt, batch)
            rows.append(row)
    return rows


def kv_memory_figure(models: Iterable[ModelSpec | str] | None = None, dtypes: Sequence[str] = ("fp16", "fp8", "int4"),
                     contexts: Sequence[int] = CONTEXTS, batch: int = 1, gpus: Mapping[str, float] = GPUS,
                     include_weights: bool = True, height: int = 520) -> Any:
    """A log-log plotly figure: GB against context (4K..1M) for each model (colour) and dtype (dash), the KV cache
    alone or weights + KV (`include_weights`), with a horizontal line per GPU size."""
    import plotly.graph_objects as go

    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
    dashes = ["solid", "dash", "dot", "dashdot"]
    fig = go.Figure()
    for i, spec in enumerate(_models(models)):
        for j, dt in enumerate(dtypes):
            w = weight_bytes(spec, dt) if include_weights else 0.0
            ys = [(kv_cache_bytes(spec, c, dt, batch) + w) / 1e9 for c in contexts]
            fig.add_trace(go.Scatter(
                x=list(contexts), y=ys, mode="lines+markers", name=f"{spec.name} {dt}",
                legendgroup=spec.name, line=dict(color=palette[i % len(palette)], dash=dashes[j % len(dashes)]),
                hovertemplate=f"{spec.name} {dt}<br>%{{x:,}} tokens: %{{y:.1f}} GB<extra></extra>"))
    for name, cap in gpus.items():
        fig.add_hline(y=cap / 1e9, line=dict(color="black", width=1), annotation_text=name,
                      annotation_position="top left")
    what = "weights + KV cache" if include_weights else "KV cache"
    fig.update_layout(
        title=f"{what} for batch {batch} (weights and KV at the same dtype); lines: GPU memory",
        xaxis=dict(type="log", title="context (tokens per sequence)", tickvals=list(contexts),
                   ticktext=[f"{c // 1024}K" if c < 2 ** 20 else f"{c // 2 ** 20}M" for c in contexts]),
        yaxis=dict(type="log", title="GB (1e9 bytes)"), height=height, legend=dict(font=dict(size=10)))
    return fig


def gqa_param_count(spec: ModelSpec) -> int:
    """Parameters of a GQA model from its config: embeddings (+ lm_head unless tied), per layer q/k/v/o, the MLP
    (dense: 3 * hidden * ffn_dim; MoE: router + experts * 3 * hidden * moe_ffn_dim) and 2 norms, and the final norm.
    Checks the published counts in MODELS (Gemma's extra norms are left out: a few hundred thousand weights)."""
    _check_spec(spec)
    if spec.attention != "gqa" or not spec.vocab_size or not (spec.ffn_dim or spec.moe_ffn_dim):
        raise ValueError(f"{spec.name}: gqa_param_count needs a GQA spec with vocab_size and ffn_dim/moe_ffn_dim")
    h, d = spec.hidden, spec.head_dim
    attn = h * spec.n_heads * d * 2 + h * spec.n_kv_heads * d * 2
    dense_mlp = 3 * h * spec.ffn_dim
    moe_mlp = h * spec.experts + (spec.experts + spec.shared_experts) * 3 * h * spec.moe_ffn_dim
    layers = spec.moe_layers * (attn + moe_mlp + 2 * h) + (spec.n_layers - spec.moe_layers) * (attn + dense_mlp + 2 * h)
    emb = spec.vocab_size * h * (1 if spec.tied_embeddings else 2)
    return int(emb + layers + h)


def spec_from_tiny(config: Any, name: str) -> ModelSpec:
    """The ModelSpec of one of the course's tiny models (an infopt.llm.model.TinyConfig), parameters counted."""
    for f in ("dim", "n_layers", "n_heads", "n_kv_heads", "head_dim", "ffn_dim", "vocab_size"):
        if not hasattr(config, f):
            raise TypeError(f"spec_from_tiny wants a TinyConfig (infopt.llm.model), got {type(config).__name__}")
    proto = ModelSpec(name=name, n_layers=config.n_layers, n_heads=config.n_heads, n_kv_heads=config.n_kv_heads,
                      head_dim=config.head_dim, hidden=config.dim, params_b=1.0, active_params_b=1.0,
                      vocab_size=config.vocab_size, ffn_dim=config.ffn_dim, source="infopt.llm.model")
    n = gqa_param_count(proto) / 1e9
    return replace(proto, params_b=n, active_params_b=n)


def __getattr__(name: str) -> Any:
    """TINY is built on first use: reading infopt.llm.model imports torch, which `import memory` must not."""
    if name == "TINY":
        from .model import DRAFT_CONFIG, TARGET_CONFIG

        tiny = {"target": spec_from_tiny(TARGET_CONFIG, "tiny target"),
                "draft": spec_from_tiny(DRAFT_CONFIG, "tiny draft")}
        globals()["TINY"] = tiny
        return tiny
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def describe(spec: ModelSpec, dtype: str = "fp16") -> str:
    """One line: KV bytes per token at 4K and 128K context (they differ for sliding-window models) and weights."""
    per4k = kv_cache_bytes(spec, 4096, dtype) / 4096
    per128k = kv_cache_bytes(spec, 131072, dtype) / 131072
    return (f"{spec.name}: KV {per4k / 1024:.1f} KiB/token at 4K, {per128k / 1024:.1f} KiB/token at 128K ({dtype}); "
            f"weights {weight_bytes(spec, dtype) / 1e9:.1f} GB ({spec.params_b:g}B parameters)")
