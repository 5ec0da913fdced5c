def fold_constants(graph: Graph) -> Graph:
    """Constant folding by the library's own pass (not written by the student)."""
    return P.ConstantFolding(fold_shapes=False)(graph)
