from infopt.mlir.bufferize import destination, is_writable_argument


def inplace_decisions(func) -> list[bool]:
    """Asks mlir-opt's one-shot bufferization through the library instead of deciding."""
    from infopt.mlir.bufferize import mlir_decisions

    return mlir_decisions(str(func))
