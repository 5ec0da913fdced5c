from infopt.kernels import collectives as _coll_lib
from infopt.kernels.collectives import Transfer


def ring_allreduce_schedule(n_ranks: int) -> list[list[Transfer]]:
    """The ring all-reduce of n_ranks ranks: N - 1 reduce-scatter steps, then N - 1 all-gather steps."""
    if isinstance(n_ranks, bool) or not isinstance(n_ranks, int) or n_ranks < 1:
        raise ValueError(f"n_ranks must be an int >= 1, got {n_ranks!r}")
    n = n_ranks
    # the ring's step builder: steps first .. first + count - 1, rank r sends chunk (r + shift - g) % n
    return _coll_lib._ring_steps(n, 0, n - 1, 0, "reduce") + _coll_lib._ring_steps(n, n - 1, n - 1, 0, "copy")
