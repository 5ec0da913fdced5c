from infopt.kernels.layout import Layout, coalesce, make_layout


def _leaves(shape, stride):
    if isinstance(shape, int):
        return [(shape, stride)]
    return [leaf for s, d in zip(shape, stride) for leaf in _leaves(s, d)]


def composition(a: Layout, b: Layout) -> Layout:
    """Flattens B's nested shape into its leaves, so R has one mode per leaf instead of B's profile."""
    if not isinstance(b.shape, int):
        return make_layout([composition(a, Layout(s, d)) for s, d in _leaves(b.shape, b.stride)])
    s, d = b.shape, b.stride
    flat = coalesce(a)
    shapes = flat.shape if isinstance(flat.shape, tuple) else (flat.shape,)
    strides = flat.stride if isinstance(flat.stride, tuple) else (flat.stride,)
    out_shape, out_stride = [], []
    rest_shape, rest_stride = s, d
    for sa, da in zip(shapes[:-1], strides[:-1]):
        if sa % rest_stride and rest_stride % sa:
            raise ValueError(f"{a} o {b}: stride divisibility condition fails")
        kept = sa // rest_stride if sa % rest_stride == 0 else 1
        new_stride = da * (sa // kept)
        rest_stride = rest_stride // sa if rest_stride % sa == 0 else 1
        if kept % rest_shape and rest_shape % kept:
            raise ValueError(f"{a} o {b}: shape divisibility condition fails")
        out_shape.append(min(kept, rest_shape))
        out_stride.append(new_stride)
        rest_shape = rest_shape // kept if rest_shape % kept == 0 else 1
    out_shape.append(rest_shape)
    out_stride.append(rest_stride * strides[-1])
    return coalesce(Layout(tuple(out_shape), tuple(out_stride)))
