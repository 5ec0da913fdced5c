def predict_cycles(M: int, N: int, K: int, config: AccelConfig) -> int:
    """Asks the library's closed-form cycle model instead of writing the formulas."""
    return matmul_cycles(M, N, K, config)
