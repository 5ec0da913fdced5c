def remove_redundant(graph: Graph) -> Graph:
    """Runs the library's algebraic simplification pass, which removes these nodes too."""
    from infopt.passes import AlgebraicSimplification

    return AlgebraicSimplification().run(graph.copy()).graph
