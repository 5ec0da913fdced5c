def conv_output_shape(x_shape, w_shape, strides=None, pads=None, dilations=None, group=1) -> tuple[int, ...]:
    """The textbook formula (D + pads - K) // s + 1, which ignores dilation."""
    k = len(x_shape) - 2
    if len(w_shape) != len(x_shape) or k < 1:
        raise ValueError(f"X {tuple(x_shape)} and W {tuple(w_shape)} must have the same rank >= 3")
    strides = list(strides) if strides is not None else [1] * k
    pads = list(pads) if pads is not None else [0] * (2 * k)
    if x_shape[1] != w_shape[1] * group:
        raise ValueError(f"channel mismatch: X has {x_shape[1]} channels, W expects {w_shape[1]} x {group}")
    if w_shape[0] % group:
        raise ValueError("output channels not divisible by group")
    out = [int(x_shape[0]), int(w_shape[0])]
    for i in range(k):
        span = x_shape[2 + i] + pads[i] + pads[k + i] - w_shape[2 + i]
        if span < 0:
            raise ValueError("kernel larger than the padded input")
        out.append(int(span // strides[i] + 1))
    return tuple(out)
