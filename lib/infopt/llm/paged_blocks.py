"""Block bookkeeping of the paged KV cache: the reference-counted block allocator and block-table edits.

Pure Python (no tensors): which physical block holds which part of which sequence. `append_slot` is exercise 2's
reference; the tensors that these numbers index live in `infopt.llm.paged` (whose docstring gives the layout).
"""
from __future__ import annotations

import heapq
import operator
from collections import Counter
from collections.abc import Sequence


class OutOfBlocks(RuntimeError):
    """No free block is left: the scheduler must preempt (recompute or swap out) a sequence, or wait."""


def checked_int(value: object, name: str, minimum: int = 0) -> int:
    """`value` as a Python int >= minimum (numpy and torch integer scalars accepted), else a ValueError naming it."""
    try:
        number = operator.index(value)
    except TypeError:
        number = None
    if number is None or isinstance(value, bool) or number < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return number


def num_blocks_for(num_tokens: int, block_size: int) -> int:
    """Blocks a sequence of `num_tokens` tokens occupies: ceil(num_tokens / block_size)."""
    block_size = checked_int(block_size, "block_size", 1)
    return -(-checked_int(num_tokens, "num_tokens") // block_size)


class BlockAllocator:
    """A pool of `num_blocks` physical blocks with reference counts (vLLM v0's BlockAllocator, v1's BlockPool).

    `allocate` hands out the lowest-numbered free block (deterministic, so block tables are easy to read and test);
    `fork` shares a block (ref + 1); `free` drops a reference and returns the block to the pool at zero.
    """

    def __init__(self, num_blocks: int) -> None:
        num_blocks = checked_int(num_blocks, "num_blocks", 1)
        self._num_blocks = num_blocks
        self._refs = [0] * num_blocks
        self._free = list(range(num_blocks))  # a heap of the blocks whose ref count is 0

    @property
    def num_blocks(self) -> int:
        """How many physical blocks the pool has."""
        return self._num_blocks

    @property
    def num_free(self) -> int:
        """How many blocks are free (ref count 0)."""
        return len(self._free)

    def _check(self, block: int) -> int:
        try:
            index = operator.index(block)
        except TypeError:
            index = None
        if index is None or isinstance(block, bool) or not 0 <= index < self._num_blocks:
            raise ValueError(f"block must be an int in [0, {self._num_blocks}), got {block!r}")
        return index

    def ref_count(self, block: int) -> int:
        """How many block tables hold `block` (0: free)."""
        return self._refs[self._check(block)]

    def allocate(self) -> int:
        """Take the lowest-numbered free block (ref count 1); OutOfBlocks when none is free."""
        if not self._free:
            raise OutOfBlocks(f"all {self._num_blocks} KV-cache blocks are in use: free or preempt (swap out, "
                              "recompute) a sequence first, or build the cache with more blocks")
        block = heapq.heappop(self._free)
        self._refs[block] = 1
        return block

    def fork(self, block: int) -> None:
        """Share an allocated block with one more block table (ref count + 1)."""
        block = self._check(block)
        if self._refs[block] == 0:
            raise ValueError(f"block {block} is free: only an allocated block can be shared (allocate it first)")
        self._refs[block] += 1

    def free(self, block: int) -> None:
        """Drop one reference to `block`; at zero it returns to the free pool. Freeing a free block is an error."""
        block = self._check(block)
        if self._refs[block] == 0:
            raise ValueError(f"double free of block {block}: it is already free")
        self._refs[block] -= 1
        if self._refs[block] == 0:
            heapq.heappush(self._free, block)

    def copy(self, spare: int = 0) -> "BlockAllocator":
        """An independent copy, with `spare` extra free blocks numbered after this pool's (to try a plan of
        allocations, and count what it needs, without touching this pool)."""
        other = BlockAllocator(self._num_blocks + spare)
        other._refs = self._refs + [0] * spare
        other._free = list(self._free) + list(range(self._num_blocks, self._num_blocks + spare))
        heapq.heapify(other._free)
        return other

    def load(self, other: "BlockAllocator") -> None:
        """Take over the state of `other`, a `copy` of this pool on which a plan succeeded (its spare blocks
        must all be free again)."""
        if other.num_blocks < self._num_blocks or any(other._refs[self._num_blocks:]):
            raise ValueError(f"cannot load a pool of {other.num_blocks} blocks (spare blocks in use) into one of "
                             f"{self._num_blocks}")
        self._refs = other._refs[:self._num_blocks]
        self._free = [b for b in other._free if b < self._num_blocks]
        heapq.heapify(self._free)

    def __repr__(self) -> str:
        return f"BlockAllocator(num_blocks={self._num_blocks}, num_free={self.num_free})"


def append_slot(allocator: BlockAllocator, table: list[int], num_tokens: int,
                block_size: int) -> tuple[list[int], tuple[int, int] | None]:
    """Make room for a sequence's next token (index `num_tokens`): a new block at a block boundary, else
    copy-on-write of a shared last block. Returns (new table, (src, dst) copy to perform or None).

    The input list is never mutated; on OutOfBlocks the allocator and the table are left unchanged.
    """
    block_size = checked_int(block_size, "block_size", 1)
    num_tokens = checked_int(num_tokens, "num_tokens")
    if len(table) != num_blocks_for(num_tokens, block_size):
        raise ValueError(f"a table for {num_tokens} tokens in blocks of {block_size} holds "
                         f"{num_blocks_for(num_tokens, block_size)} blocks, this one holds {len(table)}")
    if num_tokens % block_size == 0:  # the last block is full (or there is none): a fresh block
        return list(table) + [allocator.allocate()], None
    return copy_on_write(allocator, table, len(table) - 1)  # the last block will be written


def copy_on_write(allocator: BlockAllocator, table: Sequence[int],
                  index: int) -> tuple[list[int], tuple[int, int] | None]:
    """Make block `table[index]` exclusively this table's before it is written: if it is shared (ref count > 1),
    a fresh block replaces it (the shared one loses a reference) and the (src, dst) copy to perform is returned.

    The input is never mutated; on OutOfBlocks the allocator and the table are left unchanged.
    """
    if not 0 <= index < len(table):
        raise ValueError(f"block index {index} is outside a table of {len(table)} blocks")
    shared = table[index]
    if allocator.ref_count(shared) == 0:
        raise ValueError(f"the table holds free block {shared}: it is stale (freed or never allocated)")
    if allocator.ref_count(shared) == 1:
        return list(table), None
    fresh = allocator.allocate()  # raises before anything changed
    allocator.free(shared)
    new = list(table)
    new[index] = fresh
    return new, (shared, fresh)


def fork_table(allocator: BlockAllocator, table: Sequence[int]) -> list[int]:
    """A child's block table sharing every block of `table` (parallel sampling, a shared prompt): ref + 1 each."""
    for block in table:  # check all first, so an error changes nothing
        if allocator.ref_count(block) == 0:
            raise ValueError(f"cannot fork a table holding free block {block}: the table is stale")
    for block in table:
        allocator.fork(block)
    return list(table)


def free_table(allocator: BlockAllocator, table: Sequence[int]) -> None:
    """Drop this table's reference to each of its blocks (a finished or preempted sequence)."""
    for block, times in Counter(table).items():  # check all first, so an error changes nothing
        if allocator.ref_count(block) < times:
            raise ValueError(f"double free of block {block}: the table holds it {times} time(s), "
                             f"its ref count is {allocator.ref_count(block)}")
    for block in table:
        allocator.free(block)
