from infopt.mlir.toy import SimplifyRedundantTranspose


class TransposeOfTranspose(SimplifyRedundantTranspose):
    """Reuses the library's pattern instead of writing it."""
