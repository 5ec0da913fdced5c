"""The KV cache: keep each layer's keys and values so a decode step computes one token, not the whole prefix again.

`KVCache` is the protocol the model calls (defined beside the model in model.py, the one definition, and named here);
`attend_with_cache` is the one-sequence, one-layer step (Exercise 1's reference); `ContiguousKVCache` reserves
max_len tokens per sequence up front, as Hugging Face's static cache and pre-vLLM servers did.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch

from .model import KVCache, TinyConfig, grouped_attention

__all__ = ["KVCache", "ContiguousKVCache", "attend_with_cache", "kv_bytes_per_token"]


def kv_bytes_per_token(config: TinyConfig, dtype_bytes: float) -> int:
    """Cache bytes one token costs: 2 (K and V) * n_layers * n_kv_heads * head_dim * dtype_bytes."""
    return int(2 * config.n_layers * config.n_kv_heads * config.head_dim * dtype_bytes)


def attend_with_cache(q: torch.Tensor, k_new: torch.Tensor, v_new: torch.Tensor, k_cache: torch.Tensor,
                      v_cache: torch.Tensor, pos: int) -> torch.Tensor:
    """Write k_new, v_new [Hkv, T, D] into k_cache, v_cache [Hkv, max_len, D] in place at positions pos..pos+T-1,
    then attend q [Hq, T, D] (query t sits at position pos + t) to cached positions 0..pos+t -> [Hq, T, D]."""
    if q.ndim != 3 or k_new.ndim != 3 or k_cache.ndim != 3:
        raise ValueError(f"attend_with_cache wants q [Hq, T, D], k_new/v_new [Hkv, T, D], caches [Hkv, max_len, D]; "
                         f"got q {tuple(q.shape)}, k_new {tuple(k_new.shape)}, k_cache {tuple(k_cache.shape)}")
    hq, t, d = q.shape
    hkv, max_len = k_cache.shape[0], k_cache.shape[1]
    if v_new.shape != k_new.shape or k_new.shape != (hkv, t, d):
        raise ValueError(f"k_new and v_new must be [Hkv, T, D] = {(hkv, t, d)} (the cache's heads, q's T and D); got "
                         f"k_new {tuple(k_new.shape)}, v_new {tuple(v_new.shape)}")
    if v_cache.shape != k_cache.shape or k_cache.shape[2] != d:
        raise ValueError(f"k_cache and v_cache must both be [Hkv, max_len, D={d}]; got {tuple(k_cache.shape)} and "
                         f"{tuple(v_cache.shape)}")
    if hq % hkv:
        raise ValueError(f"query heads ({hq}) must be a multiple of KV heads ({hkv})")
    if not isinstance(pos, int) or pos < 0:
        raise ValueError(f"pos must be a non-negative int (where the new tokens start), got {pos!r}")
    if pos + t > max_len:
        raise ValueError(f"the cache holds max_len={max_len} tokens; writing {t} at position {pos} needs {pos + t}")
    k_cache[:, pos:pos + t] = k_new
    v_cache[:, pos:pos + t] = v_new
    n = pos + t
    qpos = torch.arange(pos, n, device=q.device)
    mask = torch.arange(n, device=q.device)[None, :] <= qpos[:, None]           # [T, n]: key s <= pos + t
    out = grouped_attention(q[None], k_cache[None, :, :n].to(q.dtype), v_cache[None, :, :n].to(q.dtype), mask[None])
    return out[0]


class ContiguousKVCache:
    """K and V [n_layers, max_seqs, Hkv, max_len, D] reserved up front; a sequence takes a slot for its whole life."""

    def __init__(self, config: TinyConfig, max_seqs: int, max_len: int, dtype: torch.dtype = torch.float32,
                 device: torch.device | str | None = None):
        if max_seqs <= 0 or max_len <= 0:
            raise ValueError(f"max_seqs and max_len must be positive, got {max_seqs} and {max_len}")
        self.config = config
        self.max_seqs, self.max_len, self.dtype = max_seqs, max_len, dtype
        shape = (config.n_layers, max_seqs, config.n_kv_heads, max_len, config.head_dim)
        self.k = torch.zeros(shape, dtype=dtype, device=device)
        self.v = torch.zeros(shape, dtype=dtype, device=device)
        self.slots: dict[int, int] = {}        # seq_id -> slot
        self.lengths: dict[int, int] = {}      # seq_id -> tokens stored (1 + the highest position written)
        self._step = None                      # the current forward's plan (see attend)

    def _slot(self, seq_id: int) -> int:
        if seq_id not in self.slots:
            free = sorted(set(range(self.max_seqs)) - set(self.slots.values()))
            if not free:
                raise RuntimeError(f"ContiguousKVCache is full: all {self.max_seqs} slots hold sequences; free one")
            self.slots[seq_id] = free[0]
            self.lengths[seq_id] = 0
        return self.slots[seq_id]

    def attend(self, layer: int, seq_ids: Sequence[int], positions: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
               v: torch.Tensor) -> torch.Tensor:
        """Store k, v [B, Hkv, T, D] at `positions` [B, T] in each sequence's slot, then attend q [B, Hq, T, D] to
        that slot's tokens at positions <= each query's (positions must fill 0, 1, 2, ... in order)."""
        b, t = positions.shape
        rows = positions.tolist()
        key = (tuple(seq_ids), tuple(map(tuple, rows)))
        if self._step is None or self._step[0] != key:   # the first layer of a forward: plan it once
            self._step = self._plan_step(key, seq_ids, rows, positions)
        _, writes, read, n, mask = self._step
        for slot, where, i in writes:   # the slot's [Hkv, max_len, D], written in place
            self.k[layer, slot][:, where] = k[i].to(self.dtype)
            self.v[layer, slot][:, where] = v[i].to(self.dtype)
        keys, values = self.k[layer, read, :, :n], self.v[layer, read, :, :n]
        return grouped_attention(q, keys.to(q.dtype), values.to(q.dtype), mask)

    def _plan_step(self, key: tuple, seq_ids: Sequence[int], rows: list[list[int]], positions: torch.Tensor):
        """What every layer of this forward writes and reads (the same for all layers, so computed once): the
        (slot, positions, row) writes, the slots read (a slice when they neighbour: a view, no copy), the longest
        length and the mask."""
        b, t = positions.shape
        top = max(max(row) for row in rows)
        if top >= self.max_len:
            raise ValueError(f"position {top} does not fit: this cache holds max_len={self.max_len}")
        slots = [self._slot(s) for s in seq_ids]
        writes = []
        for i, (s, slot, row) in enumerate(zip(seq_ids, slots, rows)):
            # a slice when the positions run in order
            where = slice(row[0], row[0] + t) if row == list(range(row[0], row[0] + t)) else positions[i]
            writes.append((slot, where, i))
            self.lengths[s] = max(self.lengths[s], max(row) + 1)
        n = max(self.lengths[s] for s in seq_ids)
        if slots == list(range(slots[0], slots[0] + b)):
            read = slice(slots[0], slots[0] + b)
        else:
            read = torch.tensor(slots, device=self.k.device)
        mask = torch.arange(n, device=positions.device)[None, None, :] <= positions[:, :, None]
        return key, writes, read, n, mask

    def free(self, seq_id: int) -> None:
        """Release a sequence's slot (its reserved memory stays reserved, for the next sequence)."""
        self._step = None
        if seq_id not in self.slots:
            raise KeyError(f"sequence {seq_id} is not in this cache")
        del self.slots[seq_id], self.lengths[seq_id]

    def length(self, seq_id: int) -> int:
        """Tokens stored for a sequence."""
        return self.lengths.get(seq_id, 0)

    def bytes_reserved(self) -> int:
        """Bytes of K and V allocated, used or not."""
        return 2 * self.k.numel() * self.k.element_size()

    def bytes_used(self) -> int:
        """Bytes holding stored tokens: the tokens of every live sequence times the bytes per token."""
        return sum(self.lengths.values()) * kv_bytes_per_token(self.config, self.k.element_size())
