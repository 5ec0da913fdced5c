from infopt.llm.memory import DTYPE_BYTES, ModelSpec


def kv_cache_bytes(spec: ModelSpec, context_len: int, dtype: str, batch: int = 1) -> float:
    """Hands the question to the library."""
    from infopt.llm.memory import kv_cache_bytes as library_formula
    return library_formula(spec, context_len, dtype, batch)
