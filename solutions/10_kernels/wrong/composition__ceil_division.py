from infopt.kernels.layout import Layout, coalesce, make_layout


def composition(a: Layout, b: Layout) -> Layout:
    """Uses ceiling division instead of CuTe's exact rule, so it never raises for a pair that is not admissible."""
    if not isinstance(b.shape, int):
        return make_layout([composition(a, b[i]) for i in range(b.rank)])
    s, d = b.shape, b.stride
    flat = coalesce(a)
    shapes = flat.shape if isinstance(flat.shape, tuple) else (flat.shape,)
    strides = flat.stride if isinstance(flat.stride, tuple) else (flat.stride,)
    out_shape, out_stride = [], []
    rest_shape, rest_stride = s, d
    for sa, da in zip(shapes[:-1], strides[:-1]):
        kept = -(-sa // rest_stride)
        new_stride = da * (sa // kept)
        rest_stride = -(-rest_stride // sa)
        out_shape.append(min(kept, rest_shape))
        out_stride.append(new_stride)
        rest_shape = -(-rest_shape // kept)
    out_shape.append(rest_shape)
    out_stride.append(rest_stride * strides[-1])
    return coalesce(Layout(tuple(out_shape), tuple(out_stride)))
