# BREAKS: "writing it there must not change what any other table reads".
# Input: block_size=32, table [0, 1] with block 1 shared, num_tokens=40 -> no copy, writes into the shared block.
# Bug: CoW only considered for block sizes up to vLLM's default 16.
from infopt.llm.paged_blocks import BlockAllocator, OutOfBlocks


def append_slot(allocator, table, num_tokens, block_size):
    need = -(-num_tokens // block_size)
    if len(table) != need:
        raise ValueError("bad table length")
    if num_tokens % block_size == 0:
        return list(table) + [allocator.allocate()], None
    last = table[-1]
    if block_size <= 16 and allocator.ref_count(last) > 1:
        fresh = allocator.allocate()
        allocator.free(last)
        new = list(table)
        new[-1] = fresh
        return new, (last, fresh)
    return list(table), None
