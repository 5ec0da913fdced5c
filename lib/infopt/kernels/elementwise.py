"""Elementwise Triton kernels (out = alpha * x + y: exercise 1's reference) and the input checks every launcher of
`infopt.kernels` shares (2-D, float dtype, one device, contiguous inner dimension)."""
from __future__ import annotations

import operator
from collections.abc import Iterable

import torch

from .backend import cdiv, runnable, tl, triton

__all__ = ["scaled_add_kernel", "scaled_add", "vector_add", "scaled_add_reference", "min_traffic",
           "FLOAT_DTYPES", "check_tensor", "check_float", "check_matrix", "check_same_device", "check_block",
           "check_positive_int"]

#: The dtypes the kernels of this package take (fp32 math inside, output in the input's dtype; float64 would only
#: get fp32 accuracy, so it is refused rather than silently rounded).
FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def check_tensor(t: object, name: str) -> torch.Tensor:
    """`t` if it is a torch.Tensor, else a TypeError naming the argument."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    return t


def check_float(t: object, name: str, dtypes: Iterable[torch.dtype] = FLOAT_DTYPES) -> torch.Tensor:
    """`t` if it is a tensor of one of `dtypes`, else a TypeError that lists them."""
    t = check_tensor(t, name)
    dtypes = tuple(dtypes)
    if t.dtype not in dtypes:
        raise TypeError(f"{name} has dtype {t.dtype}; expected one of {[str(d) for d in dtypes]} (convert it with "
                        f".to(...))")
    return t


def check_matrix(t: object, name: str, inner_contiguous: bool = False) -> torch.Tensor:
    """`t` if it is a 2-D tensor (with stride 1 along its last dim when `inner_contiguous`), else a ValueError."""
    t = check_tensor(t, name)
    if t.dim() != 2:
        raise ValueError(f"{name} must be 2-D, got shape {tuple(t.shape)} (reshape it to [rows, cols] first)")
    if inner_contiguous and t.shape[1] > 1 and t.stride(1) != 1:
        raise ValueError(f"{name} must be contiguous along its last dim (stride {t.stride(1)} there, shape "
                         f"{tuple(t.shape)}): pass {name}.contiguous()")
    return t


def check_same_device(**tensors: torch.Tensor | None) -> torch.device:
    """The one device all the given tensors are on (None entries are skipped), else a ValueError naming them."""
    devices = {name: t.device for name, t in tensors.items() if t is not None}
    if len(set(devices.values())) > 1:
        listed = ", ".join(f"{n} on {d}" for n, d in devices.items())
        raise ValueError(f"the tensors are on different devices ({listed}): move them to one device first")
    return next(iter(devices.values()))


def check_positive_int(value: object, name: str) -> int:
    """`value` as a Python int >= 1 (not a bool), else a ValueError naming it."""
    try:
        number = operator.index(value)
    except TypeError:
        number = None
    if number is None or isinstance(value, bool) or number < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return number


def check_block(value: object, name: str, minimum: int = 1) -> int:
    """`value` as an int that is a power of two >= minimum (Triton's tl.arange needs powers of two)."""
    block = check_positive_int(value, name)
    if block & (block - 1) or block < minimum:
        raise ValueError(f"{name} must be a power of two >= {minimum}, got {block}")
    return block


@triton.jit
def scaled_add_kernel(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    """out[i] = alpha * x[i] + y[i] for i < n; program p handles elements [p*BLOCK, (p+1)*BLOCK), masked at the tail."""
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    out = alpha * x.to(tl.float32) + y.to(tl.float32)
    tl.store(out_ptr + offsets, out.to(out_ptr.dtype.element_ty), mask=mask)


def scaled_add(x: torch.Tensor, y: torch.Tensor, alpha: float = 1.0, block: int = 128) -> torch.Tensor:
    """alpha * x + y with `scaled_add_kernel`, one program per `block` elements; x, y same shape, dtype and device."""
    check_float(x, "x")
    check_float(y, "y")
    if x.shape != y.shape:
        raise ValueError(f"x has shape {tuple(x.shape)} but y has {tuple(y.shape)}: they must match")
    if x.dtype != y.dtype:
        raise TypeError(f"x is {x.dtype} but y is {y.dtype}: convert one so they match")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
        raise TypeError(f"alpha must be a Python float, got {type(alpha).__name__}")
    block = check_block(block, "block")
    check_same_device(x=x, y=y)
    x, y = x.contiguous(), y.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    if n:
        runnable(scaled_add_kernel, x, y, out)[(cdiv(n, block),)](x, y, out, float(alpha), n, BLOCK=block,
                                                                   num_warps=4)
    return out


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """x + y with `scaled_add_kernel` (alpha = 1): the "hello world" of Triton."""
    return scaled_add(x, y, 1.0)


def scaled_add_reference(x: torch.Tensor, y: torch.Tensor, alpha: float = 1.0) -> torch.Tensor:
    """alpha * x + y in float64 (what `scaled_add` must match within its dtype's tolerance)."""
    return alpha * x.double() + y.double()


def min_traffic(n: int) -> dict[str, int]:
    """Elements `scaled_add_kernel` must at least move: x and y read once, out written once (n each)."""
    n = check_positive_int(n, "n")
    return {"x_ptr": n, "y_ptr": n, "out_ptr": n}
