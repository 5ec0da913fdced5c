from infopt.llm.memory import DTYPE_BYTES, ModelSpec


def kv_cache_bytes(spec: ModelSpec, context_len: int, dtype: str, batch: int = 1) -> float:
    """KV-cache bytes of `batch` sequences of `context_len` tokens: per-token values per layer x tokens kept x bytes."""
    bits = {"fp32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "int4": 4}[dtype]
    if spec.attention == "mla":
        values = (spec.kv_lora_rank + spec.qk_rope_head_dim) * spec.n_layers * context_len
    else:
        window = min(context_len, spec.sliding_window)
        tokens = (spec.n_layers - spec.local_layers) * context_len + spec.local_layers * window
        values = 2 * spec.n_kv_heads * spec.head_dim * tokens
    return values * bits * batch // 8                     # whole bytes
