def interchange_is_legal(deps: list, perm: tuple) -> bool:
    """Does reordering the loops as `perm` keep every dependence lexicographically non-negative?"""
    for comps in deps:
        for k in perm:
            lb, ub = comps[k]
            if lb is None or lb < 0:
                return False
            if lb > 0 or ub is None or ub > 0:   # the distance can be positive: goes forward
                break
    return True
