def interchange_is_legal(deps: list, perm: tuple) -> bool:
    """Looks only at the component of the new outermost loop, instead of the first nonzero one."""
    for comps in deps:
        lb = comps[perm[0]][0]
        if lb is None or lb < 0:
            return False
    return True
