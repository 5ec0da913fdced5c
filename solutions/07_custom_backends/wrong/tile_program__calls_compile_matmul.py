def tile_program(M: int, N: int, K: int, R: int, C: int) -> Program:
    """Hands the job to the library's driver."""
    return compile_matmul(M, N, K, AccelConfig(R, C, "ws", "int8"))
