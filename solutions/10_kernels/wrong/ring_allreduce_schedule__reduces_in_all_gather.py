from infopt.kernels.collectives import Transfer


def ring_allreduce_schedule(n_ranks: int) -> list[list[Transfer]]:
    """Uses op reduce in the all-gather phase too, adding the finished sums again (double counting)."""
    if isinstance(n_ranks, bool) or not isinstance(n_ranks, int) or n_ranks < 1:
        raise ValueError(f"n_ranks must be an int >= 1, got {n_ranks!r}")
    n = n_ranks
    return [[Transfer(r, (r + 1) % n, (r - s) % n, "reduce") for r in range(n)] for s in range(2 * (n - 1))]
