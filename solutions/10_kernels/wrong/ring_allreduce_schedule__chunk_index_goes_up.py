from infopt.kernels.collectives import Transfer


def ring_allreduce_schedule(n_ranks: int) -> list[list[Transfer]]:
    """Sends chunk (r + s) % N in step s: each step passes on a different chunk than it received."""
    if isinstance(n_ranks, bool) or not isinstance(n_ranks, int) or n_ranks < 1:
        raise ValueError(f"n_ranks must be an int >= 1, got {n_ranks!r}")
    n = n_ranks
    steps = []
    for s in range(2 * (n - 1)):
        op = "reduce" if s < n - 1 else "copy"
        steps.append([Transfer(r, (r + 1) % n, (r + s) % n, op) for r in range(n)])
    return steps
