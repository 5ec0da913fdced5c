from infopt.kernels import layout as _layout_lib
from infopt.kernels.layout import Layout, coalesce, make_layout


def composition(a: Layout, b: Layout, _compose_1d=_layout_lib.composition) -> Layout:
    """CuTe's composition A o B: R(i) = A(B(i)) for i in B's domain, R shaped like B."""
    if isinstance(b.shape, tuple):               # mode by mode, at every level of B
        return make_layout([composition(a, Layout(s, d)) for s, d in zip(b.shape, b.stride)])
    return _compose_1d(a, b)                     # one integral mode: the 1-D rule
