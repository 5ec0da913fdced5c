import math

from infopt.llm.memory import DTYPE_BYTES, ModelSpec


def kv_cache_bytes(spec: ModelSpec, context_len: int, dtype: str, batch: int = 1) -> float:
    """Rounds each value up to a whole byte: memory is byte-addressed, so INT4 is counted as one byte."""
    nbytes = math.ceil(DTYPE_BYTES[dtype])
    if spec.attention == "mla":
        return float((spec.kv_lora_rank + spec.qk_rope_head_dim) * spec.n_layers * context_len * nbytes * batch)
    local = spec.local_layers
    tokens = (spec.n_layers - local) * context_len + local * min(context_len, spec.sliding_window)
    return float(2 * spec.n_kv_heads * spec.head_dim * tokens * nbytes * batch)
