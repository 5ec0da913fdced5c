def predict_cycles(M: int, N: int, K: int, config: AccelConfig) -> int:
    """Runs the matmul on the simulator with zero operands and reads the cycles off its statistics."""
    A = np.zeros((M, K), dtype=config.operand_dtype)
    B = np.zeros((K, N), dtype=config.operand_dtype)
    _, stats = matmul(A, B, config)
    return stats.cycles
