def conv_output_shape(x_shape, w_shape, strides=None, pads=None, dilations=None, group=1) -> tuple[int, ...]:
    """Checks that X has at least 3 entries, but not that W has as many."""
    x_shape, w_shape = tuple(int(d) for d in x_shape), tuple(int(d) for d in w_shape)
    if len(x_shape) < 3:
        raise ValueError(f"X {x_shape} and W {w_shape} must have the same rank, at least 3")
    k = len(x_shape) - 2
    strides = list(strides) if strides is not None else [1] * k
    dilations = list(dilations) if dilations is not None else [1] * k
    pads = list(pads) if pads is not None else [0] * (2 * k)
    if len(strides) != k or len(dilations) != k or len(pads) != 2 * k:
        raise ValueError(f"wrong attribute lengths: strides={strides}, dilations={dilations}, pads={pads}")
    n, c = x_shape[:2]
    m, c_per_group = w_shape[:2]
    if c != c_per_group * group:
        raise ValueError(f"X has {c} channels but W expects {c_per_group} x group {group}")
    if m % group:
        raise ValueError(f"{m} output channels cannot be split into {group} groups")
    out = [n, m]
    for i in range(k):
        span = x_shape[2 + i] + pads[i] + pads[k + i] - dilations[i] * (w_shape[2 + i] - 1) - 1
        if span < 0:
            raise ValueError(f"spatial axis {i}: the kernel is larger than the padded input")
        out.append(span // strides[i] + 1)
    return tuple(out)
