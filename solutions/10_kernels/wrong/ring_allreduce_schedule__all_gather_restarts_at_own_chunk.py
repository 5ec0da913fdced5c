from infopt.kernels.collectives import Transfer


def ring_allreduce_schedule(n_ranks: int) -> list[list[Transfer]]:
    """Restarts the step count in the all-gather phase: rank r first sends chunk r, not the chunk it finished."""
    if isinstance(n_ranks, bool) or not isinstance(n_ranks, int) or n_ranks < 1:
        raise ValueError(f"n_ranks must be an int >= 1, got {n_ranks!r}")
    n = n_ranks
    steps = []
    for phase, op in ((0, "reduce"), (1, "copy")):
        for s in range(n - 1):
            steps.append([Transfer(r, (r + 1) % n, (r - s) % n, op) for r in range(n)])
    return steps
