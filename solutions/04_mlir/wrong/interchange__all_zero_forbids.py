def interchange_is_legal(deps: list, perm: tuple) -> bool:
    """Requires some positive lower bound in every dependence, so a loop-independent one (all zero) forbids."""
    for comps in deps:
        for k in perm:
            lb = comps[k][0]
            if lb is None or lb < 0:
                return False
            if lb > 0:
                break
        else:
            return False
    return True
