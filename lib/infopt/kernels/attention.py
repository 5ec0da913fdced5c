"""Flash attention (forward): softmax(q k^T / sqrt(D)) v computed one query block at a time, never storing S x S.

Each program owns a block of BLOCK_M queries of one (batch, head). It loads its Q block once, walks over the key
blocks, keeps a running row max ``m``, row sum ``l`` and unnormalized output ``acc`` in fp32 registers (the online
softmax of `online_softmax_update`, exercise 4), and stores O once. K and V are read once per query block, so the
traffic is O(S * D * S / BLOCK_M) and the storage O(S * D). In causal mode the key blocks entirely above the
diagonal are skipped, about half the work. (Exercise 5's reference is `flash_attention_kernel`.)
"""
from __future__ import annotations

import math
from typing import Any

import torch

from infopt.llm.paged_blocks import checked_int

from .backend import cdiv, runnable, tl, triton

__all__ = ["online_softmax_update", "flash_attention_kernel", "flash_attention", "flash_attention_launch",
           "attention_reference", "attention_min_reads", "HEAD_DIMS"]

HEAD_DIMS = (16, 32, 64, 128)


def online_softmax_update(m: torch.Tensor, l: torch.Tensor, acc: torch.Tensor, scores: torch.Tensor,
                          v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Fold one block of scores ``[R, C]`` and values ``v [C, D]`` into the running ``(m [R], l [R], acc [R, D])``.

    The recurrence (the final output is ``acc / l``)::

        m'   = max(m, rowmax(s))
        alpha = exp(m - m')
        l'   = alpha * l   + rowsum(exp(s - m'))
        acc' = alpha * acc + exp(s - m') @ v

    Start from m = -inf, l = 0, acc = 0. Scores may hold -inf (a causal mask): a row whose m and scores are all -inf
    keeps l = 0 and acc = 0, without NaN (exp(-inf - -inf) is avoided by using 0 as the shift for such rows)."""
    for name, t in (("m", m), ("l", l), ("acc", acc), ("scores", scores), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if scores.dim() != 2 or v.dim() != 2 or acc.dim() != 2 or m.dim() != 1 or l.dim() != 1:
        raise ValueError(f"expected m [R], l [R], acc [R, D], scores [R, C], v [C, D]; got m {tuple(m.shape)}, "
                         f"l {tuple(l.shape)}, acc {tuple(acc.shape)}, scores {tuple(scores.shape)}, "
                         f"v {tuple(v.shape)}")
    r, c = scores.shape
    if m.shape[0] != r or l.shape[0] != r or acc.shape[0] != r or v.shape[0] != c or acc.shape[1] != v.shape[1]:
        raise ValueError(f"shapes disagree: scores [R={r}, C={c}] needs m [{r}], l [{r}], v [{c}, D] and acc "
                         f"[{r}, D]; got m {tuple(m.shape)}, l {tuple(l.shape)}, v {tuple(v.shape)}, "
                         f"acc {tuple(acc.shape)}")
    m_new = torch.maximum(m, scores.max(dim=1).values if c else m)
    shift = torch.where(torch.isneginf(m_new), torch.zeros_like(m_new), m_new)  # all -inf row: exp(-inf) = 0
    alpha = torch.exp(m - shift)
    p = torch.exp(scores - shift[:, None])
    l_new = alpha * l + p.sum(dim=1)
    acc_new = alpha[:, None] * acc + p.to(v.dtype) @ v
    return m_new, l_new, acc_new


@triton.jit
def flash_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, stride_qh, stride_qs, stride_kh, stride_ks, stride_vh,
                           stride_vs, stride_oh, stride_os, S, scale, D: tl.constexpr, BLOCK_M: tl.constexpr,
                           BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    """One program: queries [pid_m * BLOCK_M, + BLOCK_M) of head program_id(1), over q, k, v, o seen as
    [B*H, S, D] with D contiguous. Grid (cdiv(S, BLOCK_M), B*H)."""
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols_d = tl.arange(0, D)
    row_ok = rows < S
    q = tl.load(q_ptr + bh * stride_qh + rows[:, None] * stride_qs + cols_d[None, :], mask=row_ok[:, None],
                other=0.0)
    qk_scale = scale * 1.4426950408889634  # exp(x) = exp2(x * log2(e))
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    if CAUSAL:
        hi = tl.minimum((pid_m + 1) * BLOCK_M, S)  # key blocks past the diagonal block hold only masked keys
    else:
        hi = S
    for start_n in range(0, hi, BLOCK_N):
        keys = start_n + tl.arange(0, BLOCK_N)
        key_ok = keys < S
        k = tl.load(k_ptr + bh * stride_kh + keys[:, None] * stride_ks + cols_d[None, :], mask=key_ok[:, None],
                    other=0.0)
        v = tl.load(v_ptr + bh * stride_vh + keys[:, None] * stride_vs + cols_d[None, :], mask=key_ok[:, None],
                    other=0.0)
        s = tl.dot(q, tl.trans(k)) * qk_scale  # [BLOCK_M, BLOCK_N] fp32, in log2 units
        allowed = key_ok[None, :]
        if CAUSAL:
            allowed = allowed & (keys[None, :] <= rows[:, None])
        s = tl.where(allowed, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        shift = tl.where(m_new == float("-inf"), 0.0, m_new)  # a row with no key yet: keep l = acc = 0
        alpha = tl.exp2(m_i - shift)
        p = tl.exp2(s - shift[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]
    tl.store(o_ptr + bh * stride_oh + rows[:, None] * stride_os + cols_d[None, :], out.to(o_ptr.dtype.element_ty),
             mask=row_ok[:, None])


def _check_block(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 16 or value & (value - 1):
        raise ValueError(f"{name} must be a power of two >= 16 (tl.dot's smallest tile), got {value!r}")
    return value


def _check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if q.dim() != 4 or k.shape != q.shape or v.shape != q.shape:
        raise ValueError(f"q, k, v must all be [B, H, S, D] of one shape; got q {tuple(q.shape)}, "
                         f"k {tuple(k.shape)}, v {tuple(v.shape)}")
    if not (q.dtype == k.dtype == v.dtype):
        raise TypeError(f"q, k, v must share a dtype; got {q.dtype}, {k.dtype}, {v.dtype}")


def flash_attention_launch(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
                           causal: bool = False, block_m: int = 32, block_n: int = 32
                           ) -> tuple[tuple[int, int], tuple[Any, ...], dict[str, Any]]:
    """``(grid, args, meta)`` that launch `flash_attention_kernel` (or a student's kernel of its signature) on
    checked contiguous ``[B, H, S, D]`` q, k, v and output o: ``kernel[grid](*args, **meta)`` or
    ``run_traced(kernel, grid, *args, **meta)``."""
    _check_qkv(q, k, v)
    if q.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise TypeError(f"flash_attention runs fp16, bf16 or fp32 tensors, got {q.dtype}: convert with .float()")
    b, h, s, d = q.shape
    if d not in HEAD_DIMS:
        raise ValueError(f"head dim D must be one of {HEAD_DIMS} (one power-of-two tile), got {d}")
    if s < 1 or b < 1 or h < 1:
        raise ValueError(f"B, H and S must be >= 1, got shape {tuple(q.shape)}")
    if not isinstance(o, torch.Tensor) or o.shape != q.shape:
        raise ValueError(f"o must be a tensor of q's shape {tuple(q.shape)}, got {getattr(o, 'shape', o)!r}")
    for name, t in (("q", q), ("k", k), ("v", v), ("o", o)):
        if not t.is_contiguous():
            raise ValueError(f"{name} must be contiguous (the kernel walks [B*H, S, D] with D innermost): "
                             f"pass {name}.contiguous()")
    block_m, block_n = _check_block(block_m, "block_m"), _check_block(block_n, "block_n")
    qf, kf, vf, of = (t.view(b * h, s, d) for t in (q, k, v, o))
    grid = (cdiv(s, block_m), b * h)
    args = (qf, kf, vf, of, qf.stride(0), qf.stride(1), kf.stride(0), kf.stride(1), vf.stride(0), vf.stride(1),
            of.stride(0), of.stride(1), s, 1.0 / math.sqrt(d))
    return grid, args, {"D": d, "BLOCK_M": block_m, "BLOCK_N": block_n, "CAUSAL": bool(causal)}


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False, block_m: int = 32,
                    block_n: int = 32, kernel: Any = None) -> torch.Tensor:
    """softmax(q k^T / sqrt(D)) v for contiguous q, k, v ``[B, H, S, D]`` (D in 16/32/64/128; fp16, bf16 or fp32)
    with `flash_attention_kernel` (or `kernel`, one of its signature); causal: query i sees keys 0..i.
    Returns O ``[B, H, S, D]`` in q's dtype."""
    _check_qkv(q, k, v)
    o = torch.empty_like(q)
    grid, args, meta = flash_attention_launch(q, k, v, o, causal, block_m, block_n)
    runnable(kernel or flash_attention_kernel, q, k, v, o)[grid](*args, **meta)
    return o


def attention_reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """The float64 reference: softmax(q k^T / sqrt(D)) v over ``[..., S, D]``, materializing the S x S scores."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.dim() < 2:
            raise ValueError(f"{name} must be a tensor [..., S, D], got {getattr(t, 'shape', type(t).__name__)}")
    if k.shape != v.shape or q.shape[-1] != k.shape[-1] or (causal and q.shape[-2] != k.shape[-2]):
        raise ValueError(f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)} disagree: k and v of one "
                         "shape, one D, and (causal) as many queries as keys")
    q64, k64, v64 = (t.detach().to(torch.float64) for t in (q, k, v))
    scores = q64 @ k64.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        s = q.shape[-2]
        above = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(above, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v64


def attention_min_reads(S: int, D: int, block_m: int, causal: bool = False, batch_heads: int = 1) -> dict[str, int]:
    """Elements of q, k, v that one (batch, head) of a flash kernel with query blocks of `block_m` reads: q once, and
    of k and v each query block's keys (all S; causal: keys 0 .. the block's last query), O(S * D * S / block_m) in
    total, never an S x S array (o is written once: S * D). With block_n dividing block_m the kernel here reads
    exactly this. Times `batch_heads` (B * H) for a whole launch."""
    S, D, block_m, batch_heads = (checked_int(v, name, 1) for v, name in
                                  ((S, "S"), (D, "D"), (block_m, "block_m"), (batch_heads, "batch_heads")))
    blocks = cdiv(S, block_m)
    if causal:
        keys = sum(min((i + 1) * block_m, S) for i in range(blocks))
    else:
        keys = blocks * S
    n = batch_heads * D
    return {"q": S * n, "k": keys * n, "v": keys * n}
