from infopt.llm.memory import DTYPE_BYTES, ModelSpec


def kv_cache_bytes(spec: ModelSpec, context_len: int, dtype: str, batch: int = 1) -> float:
    """KV-cache bytes of `batch` sequences of `context_len` tokens: per-token values per layer x tokens kept x bytes."""
    b = DTYPE_BYTES[dtype]
    window = min(context_len, spec.sliding_window)
    tokens = (spec.n_layers - spec.local_layers) * context_len + spec.local_layers * window   # token-layers kept
    if spec.attention == "mla":
        per_layer_token = spec.kv_lora_rank + spec.qk_rope_head_dim
    else:
        per_layer_token = 2 * spec.n_kv_heads * spec.head_dim
    return float(per_layer_token * tokens * b * batch)
