from infopt.kernels.collectives import Transfer


def ring_allreduce_schedule(n_ranks: int) -> list[list[Transfer]]:
    """Never checks n_ranks: 0 gives an empty schedule and a float fails inside range()."""
    n = n_ranks
    steps = []
    for s in range(2 * (n - 1)):
        op = "reduce" if s < n - 1 else "copy"
        steps.append([Transfer(r, (r + 1) % n, (r - s) % n, op) for r in range(n)])
    return steps
