# BREAKS: "writing it there must not change what any other table reads".
# Input: table [5] (shared, ref 2), num_tokens=1, block_size=4 -> writes into the shared block, no copy.
# Bug: treats the first block (the prompt's) as never needing copy-on-write.
from infopt.llm.paged_blocks import BlockAllocator, OutOfBlocks


def append_slot(allocator, table, num_tokens, block_size):
    need = -(-num_tokens // block_size)
    if len(table) != need:
        raise ValueError("bad table length")
    if num_tokens % block_size == 0:
        return list(table) + [allocator.allocate()], None
    last = table[-1]
    if len(table) > 1 and allocator.ref_count(last) > 1:
        fresh = allocator.allocate()
        allocator.free(last)
        new = list(table)
        new[-1] = fresh
        return new, (last, fresh)
    return list(table), None
