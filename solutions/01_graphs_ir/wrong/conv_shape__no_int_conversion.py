def conv_output_shape(x_shape, w_shape, strides=None, pads=None, dilations=None, group=1) -> tuple[int, ...]:
    """Output shape of an ONNX Conv of an input shaped `x_shape` with a weight shaped `w_shape`."""
    x_shape, w_shape = list(x_shape), list(w_shape)
    if len(x_shape) != len(w_shape):
        raise ValueError(f"X has rank {len(x_shape)} but W has rank {len(w_shape)}")
    if len(x_shape) < 3:
        raise ValueError(f"need at least one spatial dim, got X shape {x_shape}")
    k = len(x_shape) - 2
    strides = [1] * k if strides is None else [int(s) for s in strides]
    dilations = [1] * k if dilations is None else [int(d) for d in dilations]
    pads = [0] * (2 * k) if pads is None else [int(p) for p in pads]
    if len(strides) != k:
        raise ValueError(f"expected {k} strides, got {strides}")
    if len(dilations) != k:
        raise ValueError(f"expected {k} dilations, got {dilations}")
    if len(pads) != 2 * k:
        raise ValueError(f"expected {2 * k} pads, got {pads}")
    n, c = x_shape[:2]
    m, cg = w_shape[:2]
    if c != cg * group:
        raise ValueError(f"channels mismatch: X has {c}, W expects {cg} * group {group}")
    if m % group != 0:
        raise ValueError(f"M={m} is not divisible by group {group}")
    out = [n, m]
    for i in range(k):
        d, kk = x_shape[2 + i], w_shape[2 + i]
        o = (d + pads[i] + pads[k + i] - dilations[i] * (kk - 1) - 1) // strides[i] + 1
        if o < 1:
            raise ValueError(f"spatial dim {i}: kernel larger than the padded input")
        out.append(o)
    return tuple(out)
