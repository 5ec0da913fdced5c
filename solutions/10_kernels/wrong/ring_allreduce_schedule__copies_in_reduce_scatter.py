from infopt.kernels.collectives import Transfer


def ring_allreduce_schedule(n_ranks: int) -> list[list[Transfer]]:
    """Uses op copy in the reduce-scatter phase too, so partial sums are overwritten."""
    if isinstance(n_ranks, bool) or not isinstance(n_ranks, int) or n_ranks < 1:
        raise ValueError(f"n_ranks must be an int >= 1, got {n_ranks!r}")
    n = n_ranks
    return [[Transfer(r, (r + 1) % n, (r - s) % n, "copy") for r in range(n)] for s in range(2 * (n - 1))]
