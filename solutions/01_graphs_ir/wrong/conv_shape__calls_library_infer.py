def conv_output_shape(x_shape, w_shape, strides=None, pads=None, dilations=None, group=1) -> tuple[int, ...]:
    """Asks the library's Conv inference (GraphError is a ValueError, so the errors come for free)."""
    from infopt.ir import TensorType, get_op

    attrs = {"group": group}
    for key, value in (("strides", strides), ("pads", pads), ("dilations", dilations)):
        if value is not None:
            attrs[key] = list(value)
    if len(x_shape) != len(w_shape) or len(x_shape) < 3:
        raise ValueError("X and W must have the same rank >= 3")
    out = get_op("Conv").infer([TensorType(tuple(x_shape)), TensorType(tuple(w_shape))], attrs)[0]
    return tuple(int(d) for d in out.shape)
