from infopt.mlir.npu import MatmulOp


class NpuMatmul(MatmulOp):
    """Reuses the library's op (and its verifier) instead of defining it."""
