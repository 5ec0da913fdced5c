"""The paged KV cache (vLLM's PagedAttention design): K/V stored in fixed-size blocks reached through per-sequence
block tables, so memory is taken a block at a time and shared between sequences with copy-on-write.

Layout (unit 10 reuses it). Per layer, K and V are each a tensor ``[num_blocks, Hkv, block_size, D]`` (this cache
holds all layers as ``[n_layers, num_blocks, Hkv, block_size, D]``). A sequence's block table is a list of
physical block numbers; its token ``i`` lives in block ``table[i // block_size]``, slot ``i % block_size``. Only the
last block of a table can be partly filled: its slots at and after ``num_tokens % block_size`` are stale (whatever
an earlier owner left) and are never read. A block may appear in several tables (a fork); its reference count says
in how many, and a sequence about to write into a shared block first copies it (copy-on-write). vLLM keeps the
same indexing with layouts tuned for its kernels: v0's PagedAttention kernel splits K's D for vector loads
(K ``[num_blocks, Hkv, D / x, block_size, x]``, V ``[num_blocks, Hkv, D, block_size]``); v1's FlashAttention backend
stores ``[2, num_blocks, block_size, Hkv, D]`` per layer.

The pieces, and what vLLM calls them:
- `BlockAllocator` (in `paged_blocks`): the free pool with reference counts. vLLM v0: ``BlockAllocator`` of
  ``PhysicalTokenBlock``s (later ``NaiveBlockAllocator``, ``PrefixCachingBlockAllocator``, both under a
  ``CpuGpuBlockAllocator``), owned by the ``BlockSpaceManager`` (``SelfAttnBlockSpaceManager``) that keeps one
  ``BlockTable`` per sequence. vLLM v1: ``BlockPool`` (a ``FreeKVCacheBlockQueue`` of ``KVCacheBlock``s with
  ``ref_cnt``) under the ``KVCacheManager``. v1 hands out the least recently freed block (so cached prefixes are
  evicted in LRU order); this allocator hands out the lowest-numbered one, so tables are deterministic to test.
- `append_slot` (exercise 2): v0's ``BlockSpaceManager.append_slots``, which returns the copy-on-write pairs the
  worker performs (``blocks_to_copy``, done by the ``copy_blocks`` kernel); v1's ``KVCacheManager.allocate_slots``.
- `fork_table` / `PagedKVCache.fork`: v0's ``BlockSpaceManager.fork`` (parallel sampling / beam search share the
  prompt's blocks). v1 drops copy-on-write: a fork's or a common system prompt's KV is shared only in full blocks,
  through automatic prefix caching (a block is found by a hash of its tokens and of its prefix,
  ``KVCacheManager.get_computed_blocks``; blocks with ref_cnt 0 stay cached until evicted); `fork` here is the v0
  mechanism, which also shares the partly filled last block.
- `PagedKVCache.swap_out` / `swap_in`: v0's ``BlockSpaceManager.swap_out/swap_in`` and the ``swap_blocks`` kernel
  (preemption by swapping to CPU memory); v1 preempts by recomputation only.
- writes into the blocks: v0/v1's ``reshape_and_cache`` kernel with a ``slot_mapping`` (block * block_size + slot).
- `paged_attention` (exercise 3) and `PagedKVCache.attend`: the PagedAttention kernel (``paged_attention_v1/v2``),
  which reads K/V through ``block_tables`` and ``seq_lens``. Here the gather is done in torch and the math is
  `infopt.llm.model.grouped_attention`, the one attention every cache uses.
- `memory_waste` / `measure_waste`: internal fragmentation (the unfilled tail of each last block) against a
  contiguous cache that reserves ``max_len`` per sequence, the waste the PagedAttention paper measured.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .kv_cache import ContiguousKVCache
from .model import TinyConfig, grouped_attention
from .paged_blocks import (BlockAllocator, OutOfBlocks, append_slot, checked_int, copy_on_write, fork_table,
                           free_table, num_blocks_for)

__all__ = ["BlockAllocator", "OutOfBlocks", "append_slot", "copy_on_write", "fork_table", "free_table",
           "num_blocks_for", "paged_attention", "gather_kv", "PagedKVCache", "WasteReport", "memory_waste",
           "measure_waste"]


def gather_kv(blocks: torch.Tensor, table: Sequence[int], num_tokens: int) -> torch.Tensor:
    """Read one sequence's first `num_tokens` K (or V) rows through its block table:
    ``[num_blocks, Hkv, block_size, D]`` -> ``[Hkv, num_tokens, D]`` (stale slots are never read)."""
    if blocks.dim() != 4:
        raise ValueError(f"blocks must be [num_blocks, Hkv, block_size, D], got shape {tuple(blocks.shape)}")
    n_blocks, hkv, block_size, d = blocks.shape
    needed = num_blocks_for(num_tokens, block_size)
    if len(table) < needed:
        raise ValueError(f"{num_tokens} tokens in blocks of {block_size} need {needed} table entries, "
                         f"the table has {len(table)}")
    entries = [checked_int(b, "a block table entry") for b in list(table)[:needed]]
    if any(b >= n_blocks for b in entries):
        raise ValueError(f"block table {entries} names a block outside [0, {n_blocks})")
    index = torch.tensor(entries, dtype=torch.long, device=blocks.device)
    rows = blocks[index].permute(1, 0, 2, 3).reshape(hkv, needed * block_size, d)
    return rows[:, :num_tokens]


def paged_attention(q: torch.Tensor, k_blocks: torch.Tensor, v_blocks: torch.Tensor, table: Sequence[int],
                    context_len: int) -> torch.Tensor:
    """One decode query ``q [Hq, D]`` (at position context_len - 1) attending to its sequence's tokens
    0..context_len-1, read through the block table from ``k_blocks, v_blocks [num_blocks, Hkv, block_size, D]``.
    Returns ``[Hq, D]``. (Exercise 3's reference.)"""
    if q.dim() != 2:
        raise ValueError(f"q must be one decode query [Hq, D], got shape {tuple(q.shape)}")
    if k_blocks.shape != v_blocks.shape:
        raise ValueError(f"k_blocks {tuple(k_blocks.shape)} and v_blocks {tuple(v_blocks.shape)} must match")
    if k_blocks.dim() != 4 or k_blocks.shape[-1] != q.shape[-1]:
        raise ValueError(f"k_blocks must be [num_blocks, Hkv, block_size, D] with D = {q.shape[-1]} (q's), "
                         f"got {tuple(k_blocks.shape)}")
    context_len = checked_int(context_len, "context_len (the query's own token is cached)", 1)
    k = gather_kv(k_blocks, table, context_len)[None]  # [1, Hkv, S, D]
    v = gather_kv(v_blocks, table, context_len)[None]
    mask = torch.ones(1, 1, context_len, dtype=torch.bool, device=q.device)
    return grouped_attention(q[None, :, None, :], k.to(q.dtype), v.to(q.dtype), mask)[0, :, 0, :]


@dataclass(frozen=True)
class SwappedSequence:
    """A sequence swapped out to CPU memory: its blocks' K and V ``[n_layers, n_blocks, Hkv, block_size, D]``."""
    k: torch.Tensor
    v: torch.Tensor
    num_tokens: int


@dataclass(frozen=True)
class _StepPlan:
    """One forward's writes and reads, shared by its layers: flat slot rows of the new tokens (``[B * Hkv * T]``,
    in k's ``[B, Hkv, T]`` order, or of its ``source`` rows), of the tokens each row reads (``[B * Hkv * S]``), and the mask ``[B, T, S]``."""
    key: tuple
    write_index: torch.Tensor
    read_index: torch.Tensor
    mask: torch.Tensor
    span: int
    source: torch.Tensor | None = None  # padded rows: which of k's ``[B * Hkv * T]`` rows are real tokens


class PagedKVCache:
    """A KV cache of `num_blocks` blocks of `block_size` tokens for a batch of sequences (the `KVCache` protocol of
    `infopt.llm.kv_cache`): each sequence has its own block table and length; prefill chunks and single-token
    decodes may be mixed across calls; OutOfBlocks leaves every table, length, count and tensor as it was.
    """

    def __init__(self, config: TinyConfig, num_blocks: int, block_size: int, dtype: torch.dtype = torch.float32,
                 device: torch.device | str | None = None) -> None:
        block_size = checked_int(block_size, "block_size", 1)
        self.config = config
        self.block_size = block_size
        self.dtype = dtype
        self.allocator = BlockAllocator(num_blocks)
        shape = (config.n_layers, num_blocks, config.n_kv_heads, block_size, config.head_dim)
        self.k = torch.zeros(shape, dtype=dtype, device=device)
        self.v = torch.zeros(shape, dtype=dtype, device=device)
        self._tables: dict[int, list[int]] = {}
        self._lengths: dict[int, int] = {}
        self._swapped: dict[int, SwappedSequence] = {}
        self.copies_done = 0  # copy-on-write block copies performed so far
        self._step: _StepPlan | None = None  # the current forward's plan; any change of the tables drops it

    # --- sequences -------------------------------------------------------------------------------------------
    @property
    def num_blocks(self) -> int:
        """Physical blocks in the pool."""
        return self.allocator.num_blocks

    @property
    def num_free_blocks(self) -> int:
        """Blocks no sequence holds."""
        return self.allocator.num_free

    @property
    def blocks_used(self) -> int:
        """Blocks held by at least one sequence (a shared block counts once)."""
        return self.allocator.num_blocks - self.allocator.num_free

    @property
    def tokens_stored(self) -> int:
        """Tokens of the resident sequences, summed over sequences (a shared prefix counts once per sequence)."""
        return sum(self._lengths.values())

    @property
    def seq_ids(self) -> list[int]:
        """The resident (not swapped-out) sequences, in the order they were added."""
        return list(self._tables)

    @property
    def swapped_ids(self) -> list[int]:
        """The sequences swapped out to CPU memory."""
        return list(self._swapped)

    def length(self, seq_id: int) -> int:
        """Tokens stored for a sequence, resident or swapped out (0 for one this cache does not hold)."""
        if seq_id in self._swapped:
            return self._swapped[seq_id].num_tokens
        return self._lengths.get(seq_id, 0)

    def block_table(self, seq_id: int) -> list[int]:
        """A copy of a resident sequence's block table."""
        return list(self._tables[self._resident(seq_id)])

    def block_tables(self) -> dict[int, list[int]]:
        """Copies of every resident sequence's block table (what the block-table view draws)."""
        return {s: list(t) for s, t in self._tables.items()}

    def _resident(self, seq_id: int) -> int:
        if seq_id in self._swapped:
            raise ValueError(f"sequence {seq_id} is swapped out to CPU memory: swap_in({seq_id}) first")
        if seq_id not in self._tables:
            raise KeyError(f"unknown sequence {seq_id}: add_sequence({seq_id}) (or prefill from position 0) first")
        return seq_id

    def add_sequence(self, seq_id: int) -> None:
        """Start an empty sequence (no blocks until its first token)."""
        self._step = None
        if seq_id in self._tables or seq_id in self._swapped:
            raise ValueError(f"sequence {seq_id} already exists: free({seq_id}) it first")
        self._tables[seq_id] = []
        self._lengths[seq_id] = 0

    def fork(self, parent: int, child: int) -> None:
        """A child sequence sharing all of the parent's blocks (parallel sampling, a shared system prompt); the
        first write into a shared block, by either of them, copies it."""
        self._step = None
        self._resident(parent)
        if child in self._tables or child in self._swapped:
            raise ValueError(f"sequence {child} already exists: fork into a new id")
        self._tables[child] = fork_table(self.allocator, self._tables[parent])
        self._lengths[child] = self._lengths[parent]

    def free(self, seq_id: int) -> None:
        """Forget a finished sequence: its references to its blocks are dropped (or its CPU copy, if swapped)."""
        self._step = None
        if seq_id in self._swapped:
            del self._swapped[seq_id]
            return
        free_table(self.allocator, self._tables[self._resident(seq_id)])
        del self._tables[seq_id], self._lengths[seq_id]

    def truncate(self, seq_id: int, num_tokens: int) -> None:
        """Keep only a sequence's first `num_tokens` tokens (rejected speculative tokens); spare blocks are freed."""
        self._step = None
        n = self._lengths[self._resident(seq_id)]
        if not isinstance(num_tokens, int) or not 0 <= num_tokens <= n:
            raise ValueError(f"sequence {seq_id} holds {n} tokens: truncate to 0..{n}, got {num_tokens!r}")
        keep = num_blocks_for(num_tokens, self.block_size)
        free_table(self.allocator, self._tables[seq_id][keep:])
        self._tables[seq_id] = self._tables[seq_id][:keep]
        self._lengths[seq_id] = num_tokens

    # --- planning writes (all-or-nothing) --------------------------------------------------------------------
    def _plan(self, writes: Sequence[tuple[int, int, int]]):
        """Blocks for writing tokens [start, stop) of each (seq_id, start, stop), on a copy of the pool with spare
        blocks: returns (trial pool, tables, lengths, copies, blocks needed). Nothing of this cache changes."""
        spare = sum(2 * (num_blocks_for(stop - start, self.block_size) + 2) for _, start, stop in writes)
        trial = self.allocator.copy(spare)
        tables, lengths, copies = dict(self._tables), dict(self._lengths), []
        for seq_id, start, stop in writes:
            if seq_id not in tables:
                if seq_id in self._swapped or start != 0:
                    self._resident(seq_id)  # raises: swapped out, or unknown and not starting at 0
                tables[seq_id], lengths[seq_id] = [], 0  # a new sequence, prefilled from position 0
            n, table = lengths[seq_id], tables[seq_id]
            if start > n:
                raise ValueError(f"sequence {seq_id} holds {n} tokens: writing from position {start} would leave "
                                 f"a gap (write from position {n} or earlier)")
            if start < min(stop, n):  # overwriting stored positions (a later layer, a rewrite)
                for index in range(start // self.block_size, num_blocks_for(min(stop, n), self.block_size)):
                    table, copy = copy_on_write(trial, table, index)
                    copies += [copy] if copy else []
            for pos in range(max(start, n), stop):  # appending: a block at each boundary, maybe a CoW at the first
                if pos % self.block_size == 0 or pos == n:
                    table, copy = append_slot(trial, table, pos, self.block_size)
                    copies += [copy] if copy else []
            tables[seq_id], lengths[seq_id] = table, max(n, stop)
        needed = (trial.num_blocks - trial.num_free) - self.blocks_used
        return trial, tables, lengths, copies, needed

    def blocks_needed(self, seq_ids: Sequence[int], num_new_tokens: int = 1) -> int:
        """Free blocks that appending `num_new_tokens` tokens to each of these sequences would take (new blocks
        and copy-on-write copies, with sharing between them accounted exactly)."""
        num_new_tokens = checked_int(num_new_tokens, "num_new_tokens")
        writes = [(s, self._lengths[self._resident(s)], self._lengths[s] + num_new_tokens) for s in seq_ids]
        return self._plan(writes)[4]

    def can_append(self, seq_ids: Sequence[int], num_new_tokens: int = 1) -> bool:
        """Whether one decode step (or `num_new_tokens` tokens) for each of these sequences fits in the free blocks."""
        return self.blocks_needed(seq_ids, num_new_tokens) <= self.num_free_blocks

    def reserve(self, writes: Sequence[tuple[int, int, int]]) -> None:
        """Make tokens [start, stop) of each (seq_id, start, stop) writable: allocate blocks, do the copy-on-write
        copies (all layers). Raises OutOfBlocks, changing nothing, when the free blocks do not suffice."""
        self._step = None
        if len({s for s, _, _ in writes}) != len(writes):
            raise ValueError(f"each sequence may appear once per call, got {[s for s, _, _ in writes]}")
        writes = [(s, checked_int(start, "start"), checked_int(stop, "stop")) for s, start, stop in writes]
        for seq_id, start, stop in writes:
            if start > stop:
                raise ValueError(f"sequence {seq_id}: write positions [start, stop) need start <= stop, got "
                                 f"[{start}, {stop})")
        trial, tables, lengths, copies, needed = self._plan(writes)
        if needed > self.num_free_blocks:
            raise OutOfBlocks(f"writing these tokens needs {needed} more KV-cache blocks, {self.num_free_blocks} of "
                              f"{self.num_blocks} are free: preempt (swap out, recompute) a sequence, or wait")
        for src, dst in copies:
            self.k[:, dst] = self.k[:, src]
            self.v[:, dst] = self.v[:, src]
        self.copies_done += len(copies)
        self.allocator.load(trial)
        self._tables, self._lengths = tables, lengths

    # --- the KVCache protocol --------------------------------------------------------------------------------
    def attend(self, layer: int, seq_ids: Sequence[int], positions: torch.Tensor, q: torch.Tensor,
               k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Store k, v ``[B, Hkv, T, D]`` of these tokens (row b at positions[b], consecutive) in the blocks of
        seq_ids[b], then attend each query ``q [B, Hq, T, D]`` to its sequence's tokens at positions <= its own.
        Returns ``[B, Hq, T, D]``. A sequence not seen before starts empty (its first row must begin at 0).
        The first call of a forward reserves the blocks and plans the step (`_plan_step`); the other layers' calls,
        with the same seq_ids and positions and no change of the tables in between, reuse that plan."""
        cfg = self.config
        if not 0 <= layer < cfg.n_layers:
            raise ValueError(f"layer must be in [0, {cfg.n_layers}), got {layer}")
        if q.dim() != 4 or k.shape != v.shape or k.dim() != 4 or k.shape[0] != q.shape[0] \
                or k.shape[2] != q.shape[2] or k.shape[1] != cfg.n_kv_heads or k.shape[3] != cfg.head_dim:
            raise ValueError(f"expected q [B, Hq, T, {cfg.head_dim}] and k, v [B, {cfg.n_kv_heads}, T, "
                             f"{cfg.head_dim}], got q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}")
        batch, _, t, _ = q.shape
        if t == 0 or batch == 0:
            raise ValueError(f"attend needs at least one sequence and one token, got q {tuple(q.shape)}")
        positions = torch.as_tensor(positions, dtype=torch.long)
        if positions.shape != (batch, t) or len(seq_ids) != batch:
            raise ValueError(f"expected positions [{batch}, {t}] and {batch} seq_ids, got positions "
                             f"{tuple(positions.shape)} and {len(seq_ids)} seq_ids")
        rows = positions.tolist()
        key = (tuple(seq_ids), tuple(map(tuple, rows)))
        if self._step is None or self._step.key != key:   # the first layer of a forward: plan the step once
            for seq_id, row in zip(seq_ids, rows):
                if row != list(range(row[0], row[0] + t)):
                    raise ValueError(f"positions of sequence {seq_id} must be consecutive, got {row}")
            self.reserve([(s, row[0], row[0] + t) for s, row in zip(seq_ids, rows)])
            self._step = self._plan_step(key, seq_ids, rows, positions)
        plan = self._step

        # vLLM's reshape_and_cache: one index_copy per tensor writes every new token of every row
        flat_k, flat_v = (store[layer].view(-1, cfg.head_dim) for store in (self.k, self.v))
        new_k, new_v = k.reshape(-1, cfg.head_dim), v.reshape(-1, cfg.head_dim)
        if plan.source is not None:   # padded rows (see prepare): only their real tokens are stored
            new_k, new_v = new_k.index_select(0, plan.source), new_v.index_select(0, plan.source)
        flat_k.index_copy_(0, plan.write_index, new_k.to(self.dtype))
        flat_v.index_copy_(0, plan.write_index, new_v.to(self.dtype))
        shape = (batch, cfg.n_kv_heads, plan.span, cfg.head_dim)
        keys = flat_k.index_select(0, plan.read_index).view(shape)
        values = flat_v.index_select(0, plan.read_index).view(shape)
        return grouped_attention(q, keys.to(q.dtype), values.to(q.dtype), plan.mask.to(q.device))

    def prepare(self, seq_ids: Sequence[int], starts: Sequence[int], lengths: Sequence[int]) -> torch.Tensor:
        """Plan one forward of rows of different lengths (the prefill chunks of a step, batched): row b stores
        ``lengths[b]`` tokens of ``seq_ids[b]`` from position ``starts[b]``; rows are padded on the right to the
        longest. Returns the positions ``[B, T]`` to run the model with: a padding token repeats its row's last
        position, its K and V are not stored, and its output is to be ignored. Raises OutOfBlocks, changing
        nothing, as `reserve` does. The model's `attend` calls with these positions use this plan."""
        if len(starts) != len(seq_ids) or len(lengths) != len(seq_ids) or not seq_ids:
            raise ValueError(f"prepare needs one start and one length per sequence, got {len(seq_ids)} seq_ids, "
                             f"{len(starts)} starts, {len(lengths)} lengths")
        lengths = [checked_int(n, "a row's length (tokens to store)", 1) for n in lengths]
        starts = [checked_int(a, "start") for a in starts]
        self.reserve([(s, a, a + n) for s, a, n in zip(seq_ids, starts, lengths)])
        t = max(lengths)
        rows = [[a + min(i, n - 1) for i in range(t)] for a, n in zip(starts, lengths)]
        positions = torch.tensor(rows, dtype=torch.long)
        self._step = self._plan_step((tuple(seq_ids), tuple(map(tuple, rows))), seq_ids, rows, positions, lengths)
        return positions

    def _plan_step(self, key: tuple, seq_ids: Sequence[int], rows: list[list[int]],
                   positions: torch.Tensor, lengths: Sequence[int] | None = None) -> "_StepPlan":
        """Where this step's tokens go and what each row reads, the same for every layer (computed once per
        forward): rows of the flattened ``[num_blocks * Hkv * block_size, D]`` view of a layer's K (or V).
        Row b reads its slots 0..context_b-1 through its table; its slots past the context (the stale tail of
        the last block, padding up to the longest context) read its token 0 again, which is always real, and are
        masked: no stale or free slot (not even NaN garbage) reaches the output."""
        cfg, bs, device = self.config, self.block_size, self.k.device
        hkv = cfg.n_kv_heads
        context = [row[-1] + 1 for row in rows]  # each row reads its tokens 0..last position
        span = max(context)
        n_entries = num_blocks_for(span, bs)
        tables = torch.tensor([self._tables[s][:n_entries] + [0] * (n_entries - len(self._tables[s][:n_entries]))
                               for s in seq_ids], dtype=torch.long, device=device)       # [B, entries]
        heads = torch.arange(hkv, device=device)[None, :, None]
        pos = positions.to(device)
        slots = torch.arange(span, device=device)
        valid = slots[None, :] < torch.tensor(context, device=device)[:, None]            # [B, S]
        read_blocks = torch.where(valid, tables[:, slots // bs], tables[:, :1])
        read_slots = torch.where(valid, slots % bs, 0)
        read = (read_blocks[:, None, :] * hkv + heads) * bs + read_slots[:, None, :]       # [B, Hkv, S]
        write = (tables.gather(1, pos // bs)[:, None, :] * hkv + heads) * bs + (pos % bs)[:, None, :]  # [B, Hkv, T]
        mask = slots[None, None, :] <= pos[:, :, None]                                     # [B, T, S]
        source = None
        if lengths is not None and min(lengths) < positions.shape[1]:   # padded rows: store the real tokens only
            real = (torch.arange(positions.shape[1], device=device)[None, :]
                    < torch.tensor(list(lengths), device=device)[:, None])                # [B, T]
            source = real[:, None, :].expand(write.shape).flatten().nonzero().flatten()
            write = write.flatten()[source]
        return _StepPlan(key, write.flatten(), read.flatten(), mask, span, source)

    # --- swapping ----------------------------------------------------------------------------------------------
    def swap_out(self, seq_id: int) -> int:
        """Copy a sequence's blocks to CPU memory and release them (preemption by swapping). Returns the number of
        blocks released to the pool (a block still shared with a fork stays allocated for it)."""
        self._step = None
        table = self._tables[self._resident(seq_id)]
        index = torch.tensor(table, dtype=torch.long, device=self.k.device)
        self._swapped[seq_id] = SwappedSequence(self.k[:, index].to("cpu", copy=True),
                                                self.v[:, index].to("cpu", copy=True), self._lengths[seq_id])
        before = self.num_free_blocks
        free_table(self.allocator, table)
        del self._tables[seq_id], self._lengths[seq_id]
        return self.num_free_blocks - before

    def swap_in(self, seq_id: int) -> None:
        """Bring a swapped-out sequence back into fresh blocks (its former sharing is not restored); OutOfBlocks,
        changing nothing, when too few blocks are free."""
        self._step = None
        if seq_id not in self._swapped:
            raise KeyError(f"sequence {seq_id} is not swapped out (swapped: {self.swapped_ids})")
        saved = self._swapped[seq_id]
        need = saved.k.shape[1]
        if need > self.num_free_blocks:
            raise OutOfBlocks(f"swapping sequence {seq_id} back in needs {need} blocks, {self.num_free_blocks} are "
                              "free: preempt another sequence, or wait")
        table = [self.allocator.allocate() for _ in range(need)]
        index = torch.tensor(table, dtype=torch.long, device=self.k.device)
        self.k[:, index] = saved.k.to(self.k.device)
        self.v[:, index] = saved.v.to(self.v.device)
        self._tables[seq_id], self._lengths[seq_id] = table, saved.num_tokens
        del self._swapped[seq_id]

    # --- memory accounting -------------------------------------------------------------------------------------
    @property
    def bytes_per_token(self) -> int:
        """K and V bytes of one token over all layers: 2 * n_layers * n_kv_heads * head_dim * dtype bytes."""
        cfg = self.config
        return 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * self.k.element_size()

    def bytes_reserved(self) -> int:
        """Bytes of the whole block pool (what this cache takes from the device, used or not)."""
        return self.k.numel() * self.k.element_size() + self.v.numel() * self.v.element_size()

    def bytes_allocated(self) -> int:
        """Bytes of the blocks that sequences hold (including the unfilled tails of their last blocks)."""
        return self.blocks_used * self.block_size * self.bytes_per_token

    def bytes_used(self) -> int:
        """Bytes of the slots that hold a live token of a resident sequence (a slot shared by forks counts once)."""
        filled: dict[int, int] = {}
        for seq_id, table in self._tables.items():
            n = self._lengths[seq_id]
            for i, block in enumerate(table):
                filled[block] = max(filled.get(block, 0), min(self.block_size, n - i * self.block_size))
        return sum(filled.values()) * self.bytes_per_token

    def __repr__(self) -> str:
        return (f"PagedKVCache(num_blocks={self.num_blocks}, block_size={self.block_size}, "
                f"sequences={len(self._tables)}, swapped={len(self._swapped)}, free_blocks={self.num_free_blocks})")


@dataclass(frozen=True)
class WasteReport:
    """KV memory of a set of sequences: what they use, what a paged cache allocates for them (whole blocks) and
    what a contiguous cache reserves (max_len each). Waste = allocated or reserved minus used."""
    num_sequences: int
    used_bytes: float
    paged_bytes: float
    contiguous_bytes: float

    @property
    def paged_waste_bytes(self) -> float:
        """Internal fragmentation: the unfilled tails of the last blocks."""
        return self.paged_bytes - self.used_bytes

    @property
    def contiguous_waste_bytes(self) -> float:
        """Reserved but unused: max_len minus each sequence's length."""
        return self.contiguous_bytes - self.used_bytes

    @property
    def paged_over_contiguous(self) -> float:
        """Paged waste as a fraction of the contiguous cache's waste (the benchmark's paged_waste_over_contiguous)."""
        return self.paged_waste_bytes / self.contiguous_waste_bytes if self.contiguous_waste_bytes else 0.0

    @property
    def paged_waste_fraction(self) -> float:
        """Share of the paged allocation that is wasted."""
        return self.paged_waste_bytes / self.paged_bytes if self.paged_bytes else 0.0

    @property
    def contiguous_waste_fraction(self) -> float:
        """Share of the contiguous reservation that is wasted."""
        return self.contiguous_waste_bytes / self.contiguous_bytes if self.contiguous_bytes else 0.0


def memory_waste(lengths: Sequence[int], max_len: int, block_size: int, bytes_per_token: float = 1.0) -> WasteReport:
    """Computed waste for sequences of these lengths: paged allocates ceil(n / block_size) blocks each, contiguous
    reserves max_len each (bytes_per_token = 1 gives token slots)."""
    lengths = list(lengths)
    if any(not isinstance(n, int) or not 0 <= n <= max_len for n in lengths):
        raise ValueError(f"every length must be an int in [0, max_len={max_len}], got {lengths}")
    slots = sum(num_blocks_for(n, block_size) * block_size for n in lengths)
    return WasteReport(len(lengths), sum(lengths) * bytes_per_token, slots * bytes_per_token,
                       len(lengths) * max_len * bytes_per_token)


def measure_waste(config: TinyConfig, lengths: Sequence[int], max_len: int, block_size: int,
                  dtype: torch.dtype = torch.float32, seed: int = 0) -> WasteReport:
    """Measured waste: store sequences of these lengths (random K/V, every layer) in a real `PagedKVCache` and a
    real `ContiguousKVCache` and read their byte counters; equals `memory_waste(..., bytes_per_token)`."""
    lengths = list(lengths)
    memory_waste(lengths, max_len, block_size)  # the same checks of the lengths
    paged = PagedKVCache(config, max(1, sum(num_blocks_for(n, block_size) for n in lengths)), block_size, dtype)
    contiguous = ContiguousKVCache(config, max(1, len(lengths)), max_len, dtype)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for seq_id, n in enumerate(lengths):
            if n == 0:
                continue
            positions = torch.arange(n)[None]
            for layer in range(config.n_layers):
                q = torch.randn(1, config.n_heads, n, config.head_dim, generator=gen)
                k, v = (torch.randn(1, config.n_kv_heads, n, config.head_dim, generator=gen) for _ in range(2))
                for cache in (paged, contiguous):
                    cache.attend(layer, [seq_id], positions, q, k, v)
    if paged.bytes_used() != contiguous.bytes_used():
        raise AssertionError(f"the caches disagree on the bytes in use: paged {paged.bytes_used()}, "
                             f"contiguous {contiguous.bytes_used()}")
    return WasteReport(len(lengths), paged.bytes_used(), paged.bytes_allocated(), contiguous.bytes_reserved())
