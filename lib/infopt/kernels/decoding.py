"""Decode attention kernels: flash-decoding (split the KV length across programs) and paged decode (K/V read
through a block table, the layout of `infopt.llm.paged`).

At decode time there is one query per head, so one program per (batch, head) leaves a GPU mostly idle on long
contexts. Flash-decoding splits the S keys into `num_splits` chunks: one program per (batch*head, split) writes a
partial (m, l, acc) to scratch, and a reduce kernel combines the splits with the log-sum-exp rescaling
``out = sum_j exp(m_j - M) acc_j / sum_j exp(m_j - M) l_j`` with ``M = max_j m_j``. `paged_decode` is the
PagedAttention kernel (vLLM's ``paged_attention_v1``): per (sequence, query head), it walks the sequence's logical
blocks, looks each one up in the block table and reads only the slots below the context length (stale slots of the
last block are never loaded).
"""
from __future__ import annotations

import math

import torch

from .backend import cdiv, next_power_of_2, runnable, tl, triton
from infopt.llm.paged_blocks import checked_int

__all__ = ["flash_decoding_split_kernel", "flash_decoding_reduce_kernel", "flash_decoding", "paged_decode_kernel",
           "paged_decode", "decode_reference"]


@triton.jit
def flash_decoding_split_kernel(q_ptr, k_ptr, v_ptr, m_ptr, l_ptr, acc_ptr, S, chunk, group, scale,
                                stride_qh, stride_kh, stride_ks, stride_vh, stride_vs, D: tl.constexpr,
                                BLOCK_D: tl.constexpr, BLOCK_N: tl.constexpr):
    """Program (bh, split): query head bh (of B*H, [D] each) over keys [split*chunk, min(+chunk, S)) of its KV head
    bh // group (k, v seen as [B*Hkv, S, D]); writes m, l [B*H, num_splits] and acc [B*H, num_splits, D]."""
    bh = tl.program_id(0)
    split = tl.program_id(1)
    num_splits = tl.num_programs(1)
    kvh = bh // group
    d = tl.arange(0, BLOCK_D)
    d_ok = d < D
    q = tl.load(q_ptr + bh * stride_qh + d, mask=d_ok, other=0.0).to(tl.float32)
    qk_scale = scale * 1.4426950408889634  # exp(x) = exp2(x * log2(e))
    lo = split * chunk
    hi = tl.minimum(lo + chunk, S)
    m_i = tl.full([1], float("-inf"), tl.float32)
    l_i = tl.zeros([1], tl.float32)
    acc = tl.zeros([BLOCK_D], tl.float32)
    for start in range(lo, hi, BLOCK_N):
        keys = start + tl.arange(0, BLOCK_N)
        key_ok = keys < hi
        tile_ok = key_ok[:, None] & d_ok[None, :]
        k = tl.load(k_ptr + kvh * stride_kh + keys[:, None] * stride_ks + d[None, :], mask=tile_ok, other=0.0)
        v = tl.load(v_ptr + kvh * stride_vh + keys[:, None] * stride_vs + d[None, :], mask=tile_ok, other=0.0)
        s = tl.sum(q[None, :] * k.to(tl.float32), 1) * qk_scale
        s = tl.where(key_ok, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 0))
        alpha = tl.exp2(m_i - m_new)  # the first block has a valid key, so m_new is finite
        p = tl.exp2(s - m_new)
        l_i = l_i * alpha + tl.sum(p, 0)
        acc = acc * alpha + tl.sum(p[:, None] * v.to(tl.float32), 0)
        m_i = m_new
    part = bh * num_splits + split
    one = tl.arange(0, 1)
    tl.store(m_ptr + part + one, m_i)  # -inf, 0, 0 for a split with no keys
    tl.store(l_ptr + part + one, l_i)
    tl.store(acc_ptr + part * D + d, acc, mask=d_ok)


@triton.jit
def flash_decoding_reduce_kernel(m_ptr, l_ptr, acc_ptr, o_ptr, num_splits, D: tl.constexpr, BLOCK_D: tl.constexpr,
                                 BLOCK_SPLITS: tl.constexpr):
    """Program bh: combine the num_splits partials of head bh, rescaling each by exp(m_j - max m)."""
    bh = tl.program_id(0)
    j = tl.arange(0, BLOCK_SPLITS)
    j_ok = j < num_splits
    d = tl.arange(0, BLOCK_D)
    d_ok = d < D
    m = tl.load(m_ptr + bh * num_splits + j, mask=j_ok, other=float("-inf"))
    l = tl.load(l_ptr + bh * num_splits + j, mask=j_ok, other=0.0)
    acc = tl.load(acc_ptr + (bh * num_splits + j)[:, None] * D + d[None, :], mask=j_ok[:, None] & d_ok[None, :],
                  other=0.0)
    m_max = tl.max(m, 0)  # finite: split 0 always holds a key
    w = tl.where(m == float("-inf"), 0.0, tl.exp2(m - m_max))  # m is in log2 units (the split kernel's scale)
    total = tl.sum(w * l, 0)
    out = tl.sum(w[:, None] * acc, 0) / total
    tl.store(o_ptr + bh * D + d, out.to(o_ptr.dtype.element_ty), mask=d_ok)


def _tensor(t: object, name: str) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    return t



def _float_dtype(t: torch.Tensor, name: str) -> None:
    if t.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise TypeError(f"{name} must be fp16, bf16 or fp32, got {t.dtype}: convert with .float()")


def flash_decoding(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, num_splits: int = 4,
                   block_n: int = 16) -> torch.Tensor:
    """Decode attention of one query per head ``q [B, H, D]`` over ``k, v [B, Hkv, S, D]`` (Hkv = H, or a divisor of
    H for GQA: head h reads KV head h // (H // Hkv)), split into `num_splits` chunks of keys. Returns ``[B, H, D]``."""
    q, k, v = _tensor(q, "q"), _tensor(k, "k"), _tensor(v, "v")
    if q.dim() != 3 or k.dim() != 4 or v.shape != k.shape:
        raise ValueError(f"flash_decoding wants q [B, H, D] and k, v [B, Hkv, S, D] of one shape; got q "
                         f"{tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}")
    b, h, d = q.shape
    kb, hkv, s, kd = k.shape
    if kb != b or kd != d or hkv < 1 or h % hkv:
        raise ValueError(f"q {tuple(q.shape)} and k {tuple(k.shape)} disagree: same B and D, and H a multiple of "
                         f"Hkv")
    if s < 1:
        raise ValueError("k and v hold no keys (S = 0): a decode query needs at least its own key")
    for name, t in (("q", q), ("k", k), ("v", v)):
        _float_dtype(t, name)
    if not (q.dtype == k.dtype == v.dtype):
        raise TypeError(f"q, k, v must share a dtype; got {q.dtype}, {k.dtype}, {v.dtype}")
    num_splits = checked_int(num_splits, "num_splits", 1)
    block_n = checked_int(block_n, "block_n", 1)
    if block_n & (block_n - 1):
        raise ValueError(f"block_n must be a power of two, got {block_n}")
    qf, kf, vf = q.contiguous().view(b * h, d), k.contiguous().view(b * hkv, s, d), v.contiguous().view(b * hkv, s, d)
    chunk = cdiv(s, num_splits)
    dev = q.device
    m = torch.empty(b * h, num_splits, dtype=torch.float32, device=dev)
    l = torch.empty_like(m)
    acc = torch.empty(b * h, num_splits, d, dtype=torch.float32, device=dev)
    o = torch.empty(b * h, d, dtype=q.dtype, device=dev)
    block_d = next_power_of_2(d)
    runnable(flash_decoding_split_kernel, qf, kf, vf, m, l, acc)[(b * h, num_splits)](
        qf, kf, vf, m, l, acc, s, chunk, h // hkv, 1.0 / math.sqrt(d), qf.stride(0), kf.stride(0), kf.stride(1),
        vf.stride(0), vf.stride(1), D=d, BLOCK_D=block_d, BLOCK_N=block_n)
    runnable(flash_decoding_reduce_kernel, m, l, acc, o)[(b * h,)](
        m, l, acc, o, num_splits, D=d, BLOCK_D=block_d, BLOCK_SPLITS=next_power_of_2(num_splits))
    return o.view(b, h, d)


def decode_reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """float64 decode attention: q ``[B, H, D]`` over k, v ``[B, Hkv, S, D]`` (GQA: head h reads h // (H // Hkv))."""
    b, h, d = q.shape
    g = h // k.shape[1]
    k64 = k.to(torch.float64).repeat_interleave(g, dim=1)
    v64 = v.to(torch.float64).repeat_interleave(g, dim=1)
    scores = torch.einsum("bhd,bhsd->bhs", q.to(torch.float64), k64) / math.sqrt(d)
    return torch.einsum("bhs,bhsd->bhd", torch.softmax(scores, dim=-1), v64)


@triton.jit
def paged_decode_kernel(q_ptr, k_ptr, v_ptr, tables_ptr, lens_ptr, o_ptr, group, scale, stride_qb, stride_qh,
                        stride_kb, stride_kh, stride_ks, stride_vb, stride_vh, stride_vs, stride_tb, stride_ob,
                        stride_oh, D: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_SIZE: tl.constexpr,
                        BLOCK_SLOTS: tl.constexpr):
    """Program (b, h): query head h of sequence b over its context_lens[b] tokens; token i is in physical block
    tables[b, i // BLOCK_SIZE], slot i % BLOCK_SIZE of k, v [num_blocks, Hkv, BLOCK_SIZE, D]; KV head h // group."""
    b = tl.program_id(0)
    h = tl.program_id(1)
    kvh = h // group
    d = tl.arange(0, BLOCK_D)
    d_ok = d < D
    slots = tl.arange(0, BLOCK_SLOTS)
    q = tl.load(q_ptr + b * stride_qb + h * stride_qh + d, mask=d_ok, other=0.0).to(tl.float32)
    qk_scale = scale * 1.4426950408889634
    n = tl.load(lens_ptr + b)
    m_i = tl.full([1], float("-inf"), tl.float32)
    l_i = tl.zeros([1], tl.float32)
    acc = tl.zeros([BLOCK_D], tl.float32)
    for logical in range(0, tl.cdiv(n, BLOCK_SIZE)):
        phys = tl.load(tables_ptr + b * stride_tb + logical).to(tl.int64)
        tokens = logical * BLOCK_SIZE + slots
        ok = (slots < BLOCK_SIZE) & (tokens < n)  # slots at and past the context length are stale: not read
        tile_ok = ok[:, None] & d_ok[None, :]
        k = tl.load(k_ptr + phys * stride_kb + kvh * stride_kh + slots[:, None] * stride_ks + d[None, :],
                    mask=tile_ok, other=0.0)
        v = tl.load(v_ptr + phys * stride_vb + kvh * stride_vh + slots[:, None] * stride_vs + d[None, :],
                    mask=tile_ok, other=0.0)
        s = tl.sum(q[None, :] * k.to(tl.float32), 1) * qk_scale
        s = tl.where(ok, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 0))
        alpha = tl.exp2(m_i - m_new)  # every logical block holds at least one token, so m_new is finite
        p = tl.exp2(s - m_new)
        l_i = l_i * alpha + tl.sum(p, 0)
        acc = acc * alpha + tl.sum(p[:, None] * v.to(tl.float32), 0)
        m_i = m_new
    out = acc / l_i
    tl.store(o_ptr + b * stride_ob + h * stride_oh + d, out.to(o_ptr.dtype.element_ty), mask=d_ok)


def paged_decode(q: torch.Tensor, k_blocks: torch.Tensor, v_blocks: torch.Tensor, block_tables: torch.Tensor,
                 context_lens: torch.Tensor) -> torch.Tensor:
    """Decode attention through block tables: ``q [B, Hq, D]``, ``k_blocks, v_blocks [num_blocks, Hkv, block_size,
    D]`` (infopt.llm.paged's layout), ``block_tables [B, max_blocks]`` int32 and ``context_lens [B]`` int32 (>= 1;
    the query's own token is cached). Query head h reads KV head h // (Hq // Hkv). Returns ``[B, Hq, D]``."""
    q, kb, vb = _tensor(q, "q"), _tensor(k_blocks, "k_blocks"), _tensor(v_blocks, "v_blocks")
    tables, lens = _tensor(block_tables, "block_tables"), _tensor(context_lens, "context_lens")
    if q.dim() != 3:
        raise ValueError(f"q must be one decode query per sequence and head [B, Hq, D], got {tuple(q.shape)}")
    if kb.dim() != 4 or vb.shape != kb.shape:
        raise ValueError(f"k_blocks and v_blocks must be [num_blocks, Hkv, block_size, D] of one shape; got "
                         f"{tuple(kb.shape)} and {tuple(vb.shape)}")
    bsz, hq, d = q.shape
    num_blocks, hkv, block_size, kd = kb.shape
    if kd != d or hkv < 1 or hq % hkv:
        raise ValueError(f"q {tuple(q.shape)} and k_blocks {tuple(kb.shape)} disagree: one D, and Hq a multiple "
                         f"of Hkv")
    for name, t in (("q", q), ("k_blocks", kb), ("v_blocks", vb)):
        _float_dtype(t, name)
    if not (q.dtype == kb.dtype == vb.dtype):
        raise TypeError(f"q, k_blocks, v_blocks must share a dtype; got {q.dtype}, {kb.dtype}, {vb.dtype}")
    if tables.dim() != 2 or tables.shape[0] != bsz or tables.dtype != torch.int32:
        raise ValueError(f"block_tables must be int32 [B={bsz}, max_blocks], got {tables.dtype} "
                         f"{tuple(tables.shape)}")
    if lens.shape != (bsz,) or lens.dtype != torch.int32:
        raise ValueError(f"context_lens must be int32 [B={bsz}], got {lens.dtype} {tuple(lens.shape)}")
    lens_cpu, tables_cpu = lens.cpu(), tables.cpu()
    capacity = tables.shape[1] * block_size
    for i, n in enumerate(lens_cpu.tolist()):
        if not 1 <= n <= capacity:
            raise ValueError(f"context_lens[{i}] = {n}: it must lie in 1..{capacity} (max_blocks "
                             f"{tables.shape[1]} x block_size {block_size}, the table's capacity)")
        used = tables_cpu[i, :cdiv(n, block_size)]
        bad = used[(used < 0) | (used >= num_blocks)]
        if bad.numel():
            raise ValueError(f"block_tables[{i}] names block {int(bad[0])} among the {cdiv(n, block_size)} blocks "
                             f"its {n} tokens use, outside [0, {num_blocks})")
    q, kb, vb, tables, lens = (t.contiguous() for t in (q, kb, vb, tables, lens))
    o = torch.empty_like(q)
    runnable(paged_decode_kernel, q, kb, vb, tables, lens, o)[(bsz, hq)](
        q, kb, vb, tables, lens, o, hq // hkv, 1.0 / math.sqrt(d), q.stride(0), q.stride(1), kb.stride(0),
        kb.stride(1), kb.stride(2), vb.stride(0), vb.stride(1), vb.stride(2), tables.stride(0), o.stride(0),
        o.stride(1), D=d, BLOCK_D=next_power_of_2(d), BLOCK_SIZE=block_size, BLOCK_SLOTS=next_power_of_2(block_size))
    return o
