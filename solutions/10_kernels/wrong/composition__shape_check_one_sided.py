from infopt.kernels.layout import Layout, coalesce, make_layout


def composition(a: Layout, b: Layout) -> Layout:
    """Checks the shape condition one way only: raises when rest_shape does not divide s_i', even when s_i' divides rest_shape (B runs past the mode)."""
    if not isinstance(b.shape, int):
        return make_layout([composition(a, b[i]) for i in range(b.rank)])
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
        if kept % rest_shape and kept > 1:
            raise ValueError(f"{a} o {b}: shape divisibility condition fails")
        out_shape.append(min(kept, rest_shape))
        out_stride.append(new_stride)
        rest_shape = rest_shape // kept if rest_shape % kept == 0 else 1
    out_shape.append(rest_shape)
    out_stride.append(rest_stride * strides[-1])
    return coalesce(Layout(tuple(out_shape), tuple(out_stride)))
