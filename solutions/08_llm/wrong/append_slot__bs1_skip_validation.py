# BREAKS: "Raise ValueError when len(table) is not ceil(num_tokens / block_size)".
# Input: block_size=1, table [3], num_tokens=5 -> no ValueError.
# Bug: with block_size 1 "every block is full" so the student skips the length check.
from infopt.llm.paged_blocks import BlockAllocator, OutOfBlocks


def append_slot(allocator, table, num_tokens, block_size):
    if block_size == 1:
        return list(table) + [allocator.allocate()], None
    need = -(-num_tokens // block_size)
    if len(table) != need:
        raise ValueError("bad table length")
    if num_tokens % block_size == 0:
        return list(table) + [allocator.allocate()], None
    last = table[-1]
    if allocator.ref_count(last) > 1:
        fresh = allocator.allocate()
        allocator.free(last)
        new = list(table)
        new[-1] = fresh
        return new, (last, fresh)
    return list(table), None
