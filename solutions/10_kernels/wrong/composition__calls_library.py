from infopt.kernels.layout import Layout, coalesce, make_layout


def composition(a: Layout, b: Layout) -> Layout:
    """Hands the question to the library."""
    from infopt.kernels import layout
    return layout.composition(a, b)
