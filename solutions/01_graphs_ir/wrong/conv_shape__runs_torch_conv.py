def conv_output_shape(x_shape, w_shape, strides=None, pads=None, dilations=None, group=1) -> tuple[int, ...]:
    """Runs a torch convolution on zeros and reads the shape off (torch's errors turned into ValueError)."""
    import torch
    import torch.nn.functional as F

    if len(x_shape) != len(w_shape) or len(x_shape) < 3:
        raise ValueError("X and W must have the same rank >= 3")
    k = len(x_shape) - 2
    pads = list(pads) if pads is not None else [0] * (2 * k)
    if len(pads) != 2 * k:
        raise ValueError("need 2k pads")
    pad = []
    for i in reversed(range(k)):
        pad += [pads[i], pads[k + i]]
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[k]
    try:
        x = F.pad(torch.zeros(tuple(x_shape)), pad)
        y = conv(x, torch.zeros(tuple(w_shape)), stride=strides or 1, dilation=dilations or 1, groups=group)
    except RuntimeError as err:
        raise ValueError(str(err)) from None
    return tuple(int(d) for d in y.shape)
