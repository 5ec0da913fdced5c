from infopt.kernels.collectives import Transfer


def ring_allreduce_schedule(n_ranks: int) -> list[list[Transfer]]:
    """Treats one rank as an error (a ring needs two) instead of returning no steps."""
    if isinstance(n_ranks, bool) or not isinstance(n_ranks, int) or n_ranks < 2:
        raise ValueError(f"a ring needs at least 2 ranks, got {n_ranks!r}")
    n = n_ranks
    steps = []
    for s in range(2 * (n - 1)):
        op = "reduce" if s < n - 1 else "copy"
        steps.append([Transfer(r, (r + 1) % n, (r - s) % n, op) for r in range(n)])
    return steps
