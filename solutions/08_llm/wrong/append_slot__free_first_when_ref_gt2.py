# BREAKS: "When no block is free ... leave the allocator and the table unchanged".
# Input: no free block, last block shared with TWO forks (ref 3), partly filled -> ref count drops to 2, then OOB.
# Bug: "if ref > 2 freeing cannot return the block to the pool, so order does not matter": frees first.
from infopt.llm.paged_blocks import BlockAllocator, OutOfBlocks


def append_slot(allocator, table, num_tokens, block_size):
    need = -(-num_tokens // block_size)
    if len(table) != need:
        raise ValueError("bad table length")
    if num_tokens % block_size == 0:
        return list(table) + [allocator.allocate()], None
    last = table[-1]
    refs = allocator.ref_count(last)
    if refs > 2:
        allocator.free(last)
        fresh = allocator.allocate()
    elif refs == 2:
        fresh = allocator.allocate()
        allocator.free(last)
    else:
        return list(table), None
    new = list(table)
    new[-1] = fresh
    return new, (last, fresh)
