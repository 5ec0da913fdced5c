from infopt.llm.memory import DTYPE_BYTES, ModelSpec


def kv_cache_bytes(spec: ModelSpec, context_len: int, dtype: str, batch: int = 1) -> float:
    """Sizes the cache by the query heads, as if every head had its own K and V (multi-head attention)."""
    nbytes = DTYPE_BYTES[dtype]
    if spec.attention == "mla":
        return float((spec.kv_lora_rank + spec.qk_rope_head_dim) * spec.n_layers * context_len * nbytes * batch)
    local = spec.local_layers
    tokens = (spec.n_layers - local) * context_len + local * min(context_len, spec.sliding_window)
    return float(2 * spec.n_heads * spec.head_dim * tokens * nbytes * batch)
