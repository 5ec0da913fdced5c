"""Tiled matmul in Triton: the plain tile loop (exercise 3's reference: row-major program order, masked tails, any
strides, fp32 accumulator) and the grouped-order kernel with a fused epilogue (bias, relu/gelu/silu), plus
`grouped_order` / `l2_reuse`, which count the tile loads the grouped order saves under an LRU cache.

C[M, N] = A[M, K] @ B[K, N]; program (pid_m, pid_n) computes the BLOCK_M x BLOCK_N tile of C by walking K in
BLOCK_K steps. The output is cast to c's dtype (the inputs' dtype); bias and activation are applied in fp32.
"""
from __future__ import annotations

import torch

from .backend import cdiv, runnable, tl, triton, triton_mode
from .elementwise import check_block, check_float, check_matrix, check_positive_int, check_same_device

__all__ = ["grouped_pid", "matmul_kernel", "matmul_grouped_kernel", "matmul", "matmul_reference", "grouped_order",
           "row_major_order", "l2_reuse", "min_traffic", "interpreter_safe_operands", "ACTIVATIONS"]

#: The epilogues `matmul` fuses. "gelu" is the tanh approximation (torch's gelu(approximate="tanh")).
ACTIVATIONS = (None, "relu", "gelu", "silu")


@triton.jit
def grouped_pid(pid, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    """Program id -> (pid_m, pid_n) in grouped order: GROUP_M rows of tiles walked column by column, so a group's
    A row-panels and the B column-panel in use stay in L2 together (the Triton tutorial's "super-grouping")."""
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (pid % num_pid_in_group) % group_size_m
    pid_n = (pid % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def _sigmoid(x):
    """1 / (1 + exp(-x)) from exp(-|x|), which never overflows (tl.sigmoid's exp(-x) does for x << 0)."""
    z = tl.exp(-tl.abs(x))
    return tl.where(x >= 0, 1.0 / (1.0 + z), z / (1.0 + z))


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """C = A @ B; program pid computes tile (pid // num_pid_n, pid % num_pid_n) (row-major order), masking the M, N
    and K tails, accumulating in fp32 and storing in c's dtype. Strides are in elements (any layout)."""
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def matmul_grouped_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                          stride_cm, stride_cn, HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr,
                          GROUP_M: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                          BLOCK_K: tl.constexpr, INPUT_PRECISION: tl.constexpr):
    """C = act(A @ B + bias) with programs in grouped order (`grouped_pid`) and the epilogue fused before the store.

    Row/column indices past M/N are wrapped (% M, % N) so A and B loads need only the K mask (they read valid rows
    that the masked store then drops); ACTIVATION is "" | "relu" | "gelu" (tanh approximation) | "silu"."""
    pid = tl.program_id(0)
    pid_m, pid_n = grouped_pid(pid, tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_am = offs_m % M
    offs_bn = offs_n % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k, other=0.0)
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if HAS_BIAS:
        acc += tl.load(bias_ptr + offs_bn).to(tl.float32)[None, :]
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    elif ACTIVATION == "gelu":
        inner = 0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)     # sqrt(2/pi) * (x + 0.044715 x^3)
        acc = acc * _sigmoid(2.0 * inner)                                     # 0.5 (1 + tanh(u)) = sigmoid(2u)
    elif ACTIVATION == "silu":
        acc = acc * _sigmoid(acc)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def _check_inputs(a: object, b: object, bias: object) -> None:
    check_float(check_matrix(a, "a"), "a")
    check_float(check_matrix(b, "b"), "b")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"a is {tuple(a.shape)} and b is {tuple(b.shape)}: a's columns (K = {a.shape[1]}) must "
                         f"equal b's rows ({b.shape[0]})")
    if a.dtype != b.dtype:
        raise TypeError(f"a is {a.dtype} but b is {b.dtype}: convert one so they match")
    if 0 in a.shape or 0 in b.shape:
        raise ValueError(f"a is {tuple(a.shape)} and b is {tuple(b.shape)}: sizes must be positive")
    if bias is not None:
        check_float(bias, "bias")
        if bias.shape != (b.shape[1],):
            raise ValueError(f"bias must have shape ({b.shape[1]},) (one value per column of the output), got "
                             f"{tuple(bias.shape)}")
    check_same_device(a=a, b=b, bias=bias)


def interpreter_safe_operands(*tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The tensors, with bfloat16 ones upcast to float32 when the kernel will run in the interpreter: Triton 3.8's
    interpreter computes tl.dot on bf16 as on their raw uint16 bits. The upcast is exact, and a bf16 x bf16 product
    is exact in fp32, so the fp32-accumulated result is what a compiled bf16 dot gives."""
    if all(t.is_cuda for t in tensors) and triton_mode() == "compiled":
        return tensors
    return tuple(t.float() if t.dtype == torch.bfloat16 else t for t in tensors)


def _default_block(a: torch.Tensor, n: int) -> tuple[int, int, int, int, int]:
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages): small tiles in the interpreter; compiled, the Triton
    tutorial's Hopper choices: 128 x 256 x 64 with 3 stages for large 16-bit products (147 KiB of shared memory),
    128 x 128 x 64 with 4 stages for smaller ones, 128 x 128 x 32 for fp32."""
    if a.is_cuda and triton_mode() == "compiled":
        if a.element_size() > 2:
            return (128, 128, 32, 8, 3)
        return (128, 256, 64, 8, 3) if a.shape[0] >= 1024 and n >= 1024 else (128, 128, 64, 8, 4)
    return (32, 32, 32, 4, 2)


def matmul(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None, activation: str | None = None,
           block: tuple[int, int, int] | None = None, group_m: int = 4, grouped: bool = True,
           num_warps: int | None = None, num_stages: int | None = None,
           fp32_precision: str = "ieee") -> torch.Tensor:
    """act(a @ b + bias) for 2-D a [M, K], b [K, N] (any strides) with `matmul_grouped_kernel`; `grouped=False`
    runs the plain `matmul_kernel` (no bias or activation). block=None picks by mode (32^3 in the interpreter).

    fp32 inputs are multiplied as `fp32_precision` says in the grouped kernel: "ieee" (full fp32, torch's default;
    FMA, not tensor cores, on a GPU), "tf32" or "tf32x3"; the plain kernel uses Triton's default (tf32 on a GPU)."""
    _check_inputs(a, b, bias)
    if fp32_precision not in ("ieee", "tf32", "tf32x3"):
        raise ValueError(f"fp32_precision must be 'ieee', 'tf32' or 'tf32x3', got {fp32_precision!r}")
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
    bm, bn, bk, warps, stages = _default_block(a, b.shape[1])
    if block is not None:
        if not isinstance(block, (tuple, list)) or len(block) != 3:
            raise ValueError(f"block must be a tuple (BLOCK_M, BLOCK_N, BLOCK_K), got {block!r}")
        bm, bn, bk = (check_block(v, name, 16) for v, name in zip(block, ("BLOCK_M", "BLOCK_N", "BLOCK_K")))
    group_m = check_positive_int(group_m, "group_m")
    warps = warps if num_warps is None else check_positive_int(num_warps, "num_warps")
    stages = stages if num_stages is None else check_positive_int(num_stages, "num_stages")
    (M, K), N = a.shape, b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    grid = (cdiv(M, bm) * cdiv(N, bn),)
    a, b = interpreter_safe_operands(a, b)
    strides = (a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    if not grouped:
        if bias is not None or activation is not None:
            raise ValueError("the plain matmul_kernel has no epilogue: use grouped=True for bias or activation")
        runnable(matmul_kernel, a, b, c)[grid](a, b, c, M, N, K, *strides, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                                 num_warps=warps, num_stages=stages)
        return c
    bias_arg = c if bias is None else bias.contiguous()     # any pointer when HAS_BIAS is False; never read
    runnable(matmul_grouped_kernel, a, b, c, bias_arg)[grid](
        a, b, c, bias_arg, M, N, K, *strides, HAS_BIAS=bias is not None, ACTIVATION=activation or "",
        GROUP_M=group_m, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
        INPUT_PRECISION=fp32_precision if a.dtype == torch.float32 else "tf32",
        num_warps=warps, num_stages=stages)
    return c


def matmul_reference(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None,
                     activation: str | None = None) -> torch.Tensor:
    """act(a @ b + bias) in float64 (gelu with the tanh approximation, as the kernel)."""
    out = a.double() @ b.double()
    if bias is not None:
        out = out + bias.double()
    if activation == "relu":
        out = torch.relu(out)
    elif activation == "gelu":
        out = torch.nn.functional.gelu(out, approximate="tanh")
    elif activation == "silu":
        out = torch.nn.functional.silu(out)
    elif activation is not None:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
    return out


def min_traffic(M: int, N: int, K: int, bias: bool = False) -> dict[str, int]:
    """Minimum elements moved, keyed by kernel argument names: A and B read once, C written once (and bias N)."""
    M, N, K = (check_positive_int(v, n) for v, n in ((M, "M"), (N, "N"), (K, "K")))
    traffic = {"a_ptr": M * K, "b_ptr": K * N, "c_ptr": M * N}
    if bias:
        traffic["bias_ptr"] = N
    return traffic


def grouped_order(num_pid_m: int, num_pid_n: int, group_m: int) -> list[tuple[int, int]]:
    """Python twin of `grouped_pid`: entry i is the (pid_m, pid_n) tile program i computes."""
    num_pid_m, num_pid_n = check_positive_int(num_pid_m, "num_pid_m"), check_positive_int(num_pid_n, "num_pid_n")
    group_m = check_positive_int(group_m, "group_m")
    order = []
    for pid in range(num_pid_m * num_pid_n):
        group_id, within = divmod(pid, group_m * num_pid_n)
        first_pid_m = group_id * group_m
        group_size_m = min(num_pid_m - first_pid_m, group_m)
        order.append((first_pid_m + within % group_size_m, within // group_size_m))
    return order


def row_major_order(num_pid_m: int, num_pid_n: int) -> list[tuple[int, int]]:
    """The plain kernel's order: entry i is (i // num_pid_n, i % num_pid_n)."""
    num_pid_m, num_pid_n = check_positive_int(num_pid_m, "num_pid_m"), check_positive_int(num_pid_n, "num_pid_n")
    return [divmod(pid, num_pid_n) for pid in range(num_pid_m * num_pid_n)]


def _tile_loads(order: list[tuple[int, int]], num_pid_m: int, num_pid_n: int, num_pid_k: int,
                cache_tiles: int) -> int:
    """Tile fetches from memory when the programs run one after another in `order` through a fully associative LRU
    cache of `cache_tiles` tiles; each program touches A(pid_m, k) and B(k, pid_n) for k = 0 .. num_pid_k-1."""
    import numpy as np

    from infopt.schedule.cachesim import CacheLevel, simulate

    ids = []
    for pid_m, pid_n in order:
        for k in range(num_pid_k):
            ids.append(pid_m * num_pid_k + k)                                  # A tiles: 0 .. num_pid_m*num_pid_k-1
            ids.append(num_pid_m * num_pid_k + k * num_pid_n + pid_n)         # B tiles after them
    cache = CacheLevel("tiles", size=cache_tiles, assoc=cache_tiles, line=1)  # one set, one tile per "byte"
    return simulate(np.asarray(ids, dtype=np.int64), (cache,)).levels[0].misses


def l2_reuse(num_pid_m: int, num_pid_n: int, group_m: int, cache_tiles: int, num_pid_k: int = 1) -> dict:
    """Tile loads under an LRU cache of `cache_tiles` A/B tiles for row-major vs grouped program order (reusing
    `infopt.schedule.cachesim`): {"row_major", "grouped", "minimum" (each tile once), "saved" (fraction)}.

    A model of L2 for programs that run one at a time; on a GPU ~#SMs programs run at once, which the same counting
    with a proportionally larger cache approximates."""
    num_pid_m, num_pid_n = check_positive_int(num_pid_m, "num_pid_m"), check_positive_int(num_pid_n, "num_pid_n")
    group_m, cache_tiles = check_positive_int(group_m, "group_m"), check_positive_int(cache_tiles, "cache_tiles")
    num_pid_k = check_positive_int(num_pid_k, "num_pid_k")
    row = _tile_loads(row_major_order(num_pid_m, num_pid_n), num_pid_m, num_pid_n, num_pid_k, cache_tiles)
    grouped = _tile_loads(grouped_order(num_pid_m, num_pid_n, group_m), num_pid_m, num_pid_n, num_pid_k, cache_tiles)
    return {"row_major": row, "grouped": grouped, "minimum": (num_pid_m + num_pid_n) * num_pid_k,
            "saved": 1.0 - grouped / row, "cache_tiles": cache_tiles, "group_m": group_m}
