from infopt.llm.memory import DTYPE_BYTES, ModelSpec


def kv_cache_bytes(spec: ModelSpec, context_len: int, dtype: str, batch: int = 1) -> float:
    """One formula for every model: treats MLA like GQA with its n_kv_heads and head_dim."""
    nbytes = DTYPE_BYTES[dtype]
    local = spec.local_layers
    tokens = (spec.n_layers - local) * context_len + local * min(context_len, spec.sliding_window)
    return float(2 * spec.n_kv_heads * spec.head_dim * tokens * nbytes * batch)
