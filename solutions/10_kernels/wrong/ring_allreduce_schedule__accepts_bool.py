from infopt.kernels.collectives import Transfer


def ring_allreduce_schedule(n_ranks: int) -> list[list[Transfer]]:
    """The ring all-reduce of n_ranks ranks: N - 1 reduce-scatter steps, then N - 1 all-gather steps."""
    if not isinstance(n_ranks, int) or n_ranks < 1:
        raise ValueError(f"n_ranks must be an int >= 1, got {n_ranks!r}")
    n = n_ranks
    steps = []
    for s in range(n - 1):
        steps.append([Transfer(r, (r + 1) % n, (r - s) % n, "reduce") for r in range(n)])
    for s in range(n - 1):
        steps.append([Transfer(r, (r + 1) % n, (r + 1 - s) % n, "copy") for r in range(n)])
    return steps
