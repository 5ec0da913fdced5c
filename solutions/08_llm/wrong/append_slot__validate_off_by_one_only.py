# BREAKS: "Raise ValueError when len(table) is not ceil(num_tokens / block_size)".
# Input: table of 4 blocks, num_tokens=3, block_size=4 (two too many) -> no ValueError; proceeds.
# Bug: only detects a table that is off by exactly one block.
from infopt.llm.paged_blocks import BlockAllocator, OutOfBlocks


def append_slot(allocator, table, num_tokens, block_size):
    need = -(-num_tokens // block_size)
    if abs(len(table) - need) == 1:
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
