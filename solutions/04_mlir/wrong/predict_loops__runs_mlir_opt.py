def predict_loops(op) -> dict[str, int]:
    """Runs the lowering instead of predicting it."""
    from infopt.mlir.linalg_cases import cases_module, loops_counts

    func = op.parent_op()
    return loops_counts(cases_module([str(func)]))[func.sym_name.data]
