def interchange_is_legal(deps: list, perm: tuple) -> bool:
    """Reads perm the way mlir-opt's permutation-map is written (perm[i] = the new position of loop i)."""
    order = [0] * len(perm)
    for old, new in enumerate(perm):
        order[new] = old
    for comps in deps:
        for k in order:
            lb = comps[k][0]
            if lb is None or lb < 0:
                return False
            if lb > 0:
                break
    return True
