# BREAKS: "Take a block only when the token needs one"; OutOfBlocks must come from allocate() when a block is needed.
# Input: 0 free blocks, exclusive partly-filled last block -> raises OutOfBlocks although nothing must be allocated.
# Bug: checks allocator.num_free == 0 up front for every call.
from infopt.llm.paged_blocks import BlockAllocator, OutOfBlocks


def append_slot(allocator, table, num_tokens, block_size):
    need = -(-num_tokens // block_size)
    if len(table) != need:
        raise ValueError("bad table length")
    if allocator.num_free == 0:
        raise OutOfBlocks("pool is full")
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
