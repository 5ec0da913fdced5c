def interchange_is_legal(deps: list, perm: tuple) -> bool:
    """Treats an unbounded lower bound (None) as 0 and goes on scanning."""
    for comps in deps:
        for k in perm:
            lb = comps[k][0] or 0
            if lb < 0:
                return False
            if lb > 0:
                break
    return True
