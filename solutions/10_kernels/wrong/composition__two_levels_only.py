from infopt.kernels.layout import Layout, coalesce, make_layout


def _compose_leaf(a: Layout, s: int, d: int) -> Layout:
    """A o (s:d) for one integral mode of B, by CuTe's rules."""
    flat = coalesce(a)
    shapes = flat.shape if isinstance(flat.shape, tuple) else (flat.shape,)
    strides = flat.stride if isinstance(flat.stride, tuple) else (flat.stride,)
    out_shape, out_stride = [], []
    rest_shape, rest_stride = s, d
    for i, (sa, da) in enumerate(zip(shapes[:-1], strides[:-1])):
        if sa % rest_stride != 0 and rest_stride % sa != 0:
            raise ValueError(f"stride divisibility condition fails: mode {sa} vs rest_stride {rest_stride}")
        new_sa = sa // rest_stride if sa % rest_stride == 0 else 1
        new_da = da * (sa // new_sa)
        rest_stride = rest_stride // sa if rest_stride % sa == 0 else 1
        if new_sa % rest_shape != 0 and rest_shape % new_sa != 0:
            raise ValueError(f"shape divisibility condition fails: mode {new_sa} vs rest_shape {rest_shape}")
        out_shape.append(min(new_sa, rest_shape))
        out_stride.append(new_da)
        rest_shape = rest_shape // new_sa if rest_shape % new_sa == 0 else 1
    out_shape.append(rest_shape)
    out_stride.append(rest_stride * strides[-1])
    return coalesce(Layout(tuple(out_shape), tuple(out_stride)))


def composition(a: Layout, b: Layout) -> Layout:
    """CuTe's composition A o B: R(i) = A(B(i)) for i in B's domain, R shaped like B."""
    if not isinstance(b.shape, tuple):
        return _compose_leaf(a, b.shape, b.stride)
    modes = []
    for s, d in zip(b.shape, b.stride):          # B's modes ...
        if isinstance(s, tuple):                 # ... and the modes of a nested mode
            modes.append(make_layout([_compose_leaf(a, si, di) for si, di in zip(s, d)]))
        else:
            modes.append(_compose_leaf(a, s, d))
    return make_layout(modes)
