def order(deps):
    """Topological order of a dict name -> list of dependencies (sorted names break ties)."""
    return sorted(deps)
