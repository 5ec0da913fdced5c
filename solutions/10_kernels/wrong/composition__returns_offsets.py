from infopt.kernels.layout import Layout, coalesce, make_layout


def composition(a: Layout, b: Layout) -> list:
    """Returns the list of offsets A(B(i)) instead of a Layout."""
    return [a(int(j)) for j in b.offsets()]
