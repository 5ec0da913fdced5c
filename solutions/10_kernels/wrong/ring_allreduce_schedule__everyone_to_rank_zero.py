from infopt.kernels.collectives import Transfer


def ring_allreduce_schedule(n_ranks: int) -> list[list[Transfer]]:
    """The naive all-reduce: every rank sends its whole buffer to rank 0, which sends the sum back."""
    if isinstance(n_ranks, bool) or not isinstance(n_ranks, int) or n_ranks < 1:
        raise ValueError(f"n_ranks must be an int >= 1, got {n_ranks!r}")
    n = n_ranks
    everything = tuple(range(n))
    if n == 1:
        return []
    gather = [[Transfer(r, 0, everything, "reduce")] for r in range(1, n)]
    scatter = [[Transfer(0, r, everything, "copy")] for r in range(1, n)]
    return gather + scatter
