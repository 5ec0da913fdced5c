from infopt.kernels import collectives as _coll_lib
from infopt.kernels.collectives import Transfer


def ring_allreduce_schedule(n_ranks: int, _ring=_coll_lib.ring_allreduce_schedule) -> list[list[Transfer]]:
    """The ring all-reduce of n_ranks ranks: N - 1 reduce-scatter steps, then N - 1 all-gather steps."""
    return _ring(n_ranks)
