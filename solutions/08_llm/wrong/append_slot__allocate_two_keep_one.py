# BREAKS: "Take a block only when the token needs one" (and OutOfBlocks only when no block is free).
# Input: pool with exactly ONE free block, shared partly-filled last block -> raises OutOfBlocks wrongly.
# Bug: in copy-on-write takes two blocks (one "spare") and returns the higher one.
from infopt.llm.paged_blocks import BlockAllocator, OutOfBlocks


def append_slot(allocator, table, num_tokens, block_size):
    need = -(-num_tokens // block_size)
    if len(table) != need:
        raise ValueError("bad table length")
    if num_tokens % block_size == 0:
        return list(table) + [allocator.allocate()], None
    last = table[-1]
    if allocator.ref_count(last) > 1:
        a = allocator.allocate()
        try:
            b = allocator.allocate()
        except OutOfBlocks:
            allocator.free(a)
            raise
        fresh, spare = min(a, b), max(a, b)
        allocator.free(spare)
        allocator.free(last)
        new = list(table)
        new[-1] = fresh
        return new, (last, fresh)
    return list(table), None
