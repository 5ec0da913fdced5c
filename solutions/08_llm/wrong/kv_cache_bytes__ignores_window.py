from infopt.llm.memory import DTYPE_BYTES, ModelSpec


def kv_cache_bytes(spec: ModelSpec, context_len: int, dtype: str, batch: int = 1) -> float:
    """Every layer keeps the whole context, sliding-window layers too."""
    nbytes = DTYPE_BYTES[dtype]
    if spec.attention == "mla":
        return float((spec.kv_lora_rank + spec.qk_rope_head_dim) * spec.n_layers * context_len * nbytes * batch)
    return float(2 * spec.n_kv_heads * spec.head_dim * spec.n_layers * context_len * nbytes * batch)
