"""Weight-only int4 matmul: symmetric group-wise quantization of W [K, N] to [-8, 7], two values per byte, and a
Triton kernel that unpacks and dequantizes the weights inside the tile loop (so only K*N/2 bytes of W are read).

Packing: packed[i, n] holds k = 2i in its low nibble and k = 2i + 1 in its high nibble, as 4-bit two's complement.
Scales: scales[g, n] = max |W[g*group_size : (g+1)*group_size, n]| / 7 (float32), W ~ q * scale.
"""
from __future__ import annotations

import torch

from .backend import cdiv, runnable, tl, triton, triton_mode
from .elementwise import check_block, check_float, check_matrix, check_positive_int, check_same_device
from .matmul import interpreter_safe_operands

__all__ = ["quantize_int4", "dequantize_int4", "pack_int4", "unpack_int4", "int4_matmul_kernel", "int4_matmul",
           "int4_matmul_reference", "min_traffic", "QMIN", "QMAX"]

QMIN, QMAX = -8, 7


def _check_group(K: int, group_size: object) -> int:
    group_size = check_positive_int(group_size, "group_size")
    if K % 2:
        raise ValueError(f"K = {K} is odd: int4 packs two rows of K per byte, so K must be even")
    if K % group_size:
        raise ValueError(f"K = {K} is not divisible by group_size = {group_size}: pick a group size that divides K")
    return group_size


def pack_int4(q: torch.Tensor) -> torch.Tensor:
    """int8 values in [-8, 7], shape [K, N] (K even) -> uint8 [K // 2, N]: even k in the low nibble, odd k high."""
    check_matrix(q, "q")
    if q.dtype != torch.int8:
        raise TypeError(f"q must be int8 (values in [-8, 7]), got {q.dtype}")
    if q.shape[0] % 2:
        raise ValueError(f"q has {q.shape[0]} rows; packing two per byte needs an even number")
    if q.numel() and (q.min() < QMIN or q.max() > QMAX):
        raise ValueError(f"q has values in [{int(q.min())}, {int(q.max())}]; int4 holds [-8, 7]")
    nibbles = (q.to(torch.int16) & 0xF)
    return (nibbles[0::2] | (nibbles[1::2] << 4)).to(torch.uint8)


def unpack_int4(packed: torch.Tensor) -> torch.Tensor:
    """uint8 [K // 2, N] -> int8 [K, N], sign-extending each nibble with (v ^ 8) - 8."""
    check_matrix(packed, "packed")
    if packed.dtype != torch.uint8:
        raise TypeError(f"packed must be uint8 (from pack_int4 / quantize_int4), got {packed.dtype}")
    p = packed.to(torch.int16)
    low, high = ((p & 0xF) ^ 8) - 8, ((p >> 4) ^ 8) - 8
    return torch.stack((low, high), dim=1).reshape(2 * packed.shape[0], packed.shape[1]).to(torch.int8)


def quantize_int4(w: torch.Tensor, group_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """W [K, N] float -> (packed uint8 [K // 2, N], scales float32 [K // group_size, N]); symmetric round-to-nearest,
    scale = absmax / 7 per (group, column), so |W - q * scale| <= scale / 2. An all-zero group gets scale 0."""
    check_float(check_matrix(w, "w"), "w")
    K, N = w.shape
    group_size = _check_group(K, group_size)
    groups = w.detach().float().reshape(K // group_size, group_size, N)
    scales = groups.abs().amax(dim=1) / QMAX
    safe = torch.where(scales == 0, torch.ones_like(scales), scales)
    q = torch.clamp(torch.round(groups / safe[:, None, :]), QMIN, QMAX).to(torch.int8).reshape(K, N)
    return pack_int4(q), scales


def _check_packed(packed: object, scales: object, group_size: object) -> tuple[int, int, int]:
    check_matrix(packed, "packed")
    check_matrix(scales, "scales")
    if packed.dtype != torch.uint8:
        raise TypeError(f"packed must be uint8 (from quantize_int4), got {packed.dtype}")
    check_float(scales, "scales")
    K, N = 2 * packed.shape[0], packed.shape[1]
    group_size = _check_group(K, group_size)
    if tuple(scales.shape) != (K // group_size, N):
        raise ValueError(f"scales has shape {tuple(scales.shape)}; packed {tuple(packed.shape)} with group_size "
                         f"{group_size} needs ({K // group_size}, {N})")
    return K, N, group_size


def dequantize_int4(packed: torch.Tensor, scales: torch.Tensor, group_size: int) -> torch.Tensor:
    """(packed, scales) -> float32 W [K, N] = q * scale (the inverse of quantize_int4 up to rounding)."""
    K, N, group_size = _check_packed(packed, scales, group_size)
    q = unpack_int4(packed).float()
    return q * scales.float().repeat_interleave(group_size, dim=0)


@triton.jit
def int4_matmul_kernel(x_ptr, p_ptr, s_ptr, out_ptr, M, N, K, stride_xm, stride_xk, stride_pk, stride_pn,
                       stride_sg, stride_sn, stride_om, stride_on, GROUP_SIZE: tl.constexpr,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                       INPUT_PRECISION: tl.constexpr):
    """out = x @ dequant(packed, scales). Per K block (inside one scale group): load BLOCK_K/2 packed rows, split the
    nibbles ((v ^ 8) - 8 sign-extends), dot the low nibbles with x's even columns and the high ones with its odd
    columns (fp32 accumulator), and multiply the partial product by the group's scales."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_h = tl.arange(0, BLOCK_K // 2)               # packed row within the block: k = 2h (low), 2h + 1 (high)
    m_mask = offs_m < M
    n_mask = offs_n < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        x_even = x_ptr + offs_m[:, None] * stride_xm + (k0 + 2 * offs_h[None, :]) * stride_xk
        xe = tl.load(x_even, mask=m_mask[:, None], other=0.0)
        xo = tl.load(x_even + stride_xk, mask=m_mask[:, None], other=0.0)
        p = tl.load(p_ptr + (k0 // 2 + offs_h[:, None]) * stride_pk + offs_n[None, :] * stride_pn,
                    mask=n_mask[None, :], other=0).to(tl.int32)
        low = (((p & 0xF) ^ 8) - 8).to(xe.dtype)          # int4 values are exact in fp16/bf16/fp32
        high = (((p >> 4) ^ 8) - 8).to(xe.dtype)
        part = tl.dot(xe, low, input_precision=INPUT_PRECISION)
        part = tl.dot(xo, high, part, input_precision=INPUT_PRECISION)
        scale = tl.load(s_ptr + (k0 // GROUP_SIZE) * stride_sg + offs_n * stride_sn, mask=n_mask, other=0.0)
        acc += part * scale.to(tl.float32)[None, :]
    tl.store(out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on,
             acc.to(out_ptr.dtype.element_ty), mask=m_mask[:, None] & n_mask[None, :])


def int4_matmul(x: torch.Tensor, packed: torch.Tensor, scales: torch.Tensor, group_size: int,
                block: tuple[int, int, int] | None = None) -> torch.Tensor:
    """x [M, K] (fp16/bf16/fp32) @ dequantize_int4(packed, scales, group_size) -> [M, N] in x's dtype, dequantizing
    inside `int4_matmul_kernel`. group_size must be a multiple of BLOCK_K (block=None: 32^3, or 64 x 128 x 64 when
    compiled if the group allows)."""
    check_float(check_matrix(x, "x"), "x")
    K, N, group_size = _check_packed(packed, scales, group_size)
    if x.shape[1] != K:
        raise ValueError(f"x has K = {x.shape[1]} columns but packed holds K = {K} rows (2 per byte)")
    check_same_device(x=x, packed=packed, scales=scales)
    if block is None:
        compiled = x.is_cuda and triton_mode() == "compiled"
        block = (64, 128, 64) if compiled and group_size % 64 == 0 else (32, 32, 32) if not compiled else (64, 128, 32)
    if not isinstance(block, (tuple, list)) or len(block) != 3:
        raise ValueError(f"block must be a tuple (BLOCK_M, BLOCK_N, BLOCK_K), got {block!r}")
    bm = check_block(block[0], "BLOCK_M", 16)
    bn = check_block(block[1], "BLOCK_N", 16)
    bk = check_block(block[2], "BLOCK_K", 32)      # two dots of BLOCK_K / 2 >= 16
    if group_size % bk:
        raise ValueError(f"group_size = {group_size} is not a multiple of BLOCK_K = {bk}: each K block must lie in one "
                         f"scale group (use group_size a multiple of {bk}, or a smaller BLOCK_K)")
    M = x.shape[0]
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    x, = interpreter_safe_operands(x)
    grid = (cdiv(M, bm), cdiv(N, bn))
    runnable(int4_matmul_kernel, x, packed, scales, out)[grid](
        x, packed, scales, out, M, N, K, x.stride(0), x.stride(1), packed.stride(0), packed.stride(1),
        scales.stride(0), scales.stride(1), out.stride(0), out.stride(1), GROUP_SIZE=group_size,
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, INPUT_PRECISION="ieee" if x.dtype == torch.float32 else "tf32",
        num_warps=4, num_stages=3)
    return out


def int4_matmul_reference(x: torch.Tensor, packed: torch.Tensor, scales: torch.Tensor,
                          group_size: int) -> torch.Tensor:
    """x @ dequantize_int4(packed, scales, group_size) in float64."""
    return x.double() @ dequantize_int4(packed, scales, group_size).double()


def min_traffic(M: int, N: int, K: int, group_size: int) -> dict[str, int]:
    """Minimum elements moved, keyed by kernel argument names: x, packed (K*N/2 bytes), scales and out once each."""
    M, N, K = (check_positive_int(v, n) for v, n in ((M, "M"), (N, "N"), (K, "K")))
    group_size = _check_group(K, group_size)
    return {"x_ptr": M * K, "p_ptr": K * N // 2, "s_ptr": K // group_size * N, "out_ptr": M * N}
