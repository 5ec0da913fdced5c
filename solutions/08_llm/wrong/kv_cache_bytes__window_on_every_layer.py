from infopt.llm.memory import DTYPE_BYTES, ModelSpec


def kv_cache_bytes(spec: ModelSpec, context_len: int, dtype: str, batch: int = 1) -> float:
    """Caps every layer at the window when the model has one, the global layers too."""
    nbytes = DTYPE_BYTES[dtype]
    if spec.attention == "mla":
        return float((spec.kv_lora_rank + spec.qk_rope_head_dim) * spec.n_layers * context_len * nbytes * batch)
    kept = min(context_len, spec.sliding_window) if spec.local_layers else context_len
    return float(2 * spec.n_kv_heads * spec.head_dim * spec.n_layers * kept * nbytes * batch)
