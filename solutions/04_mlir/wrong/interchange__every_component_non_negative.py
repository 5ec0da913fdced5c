def interchange_is_legal(deps: list, perm: tuple) -> bool:
    """Applies the tiling rule (every component non-negative), which forbids legal interchanges like (1, -1)."""
    for comps in deps:
        for k in perm:
            lb = comps[k][0]
            if lb is None or lb < 0:
                return False
    return True
