# BREAKS: "Take a block only when the token needs one" / OutOfBlocks only "when no block is free" and needed.
# Input: full pool (0 free), exclusive partly-filled last block -> raises OutOfBlocks although no block is needed.
# Bug: always allocates up front, gives the block back when it turns out not to be needed.
from infopt.llm.paged_blocks import BlockAllocator, OutOfBlocks


def append_slot(allocator, table, num_tokens, block_size):
    need = -(-num_tokens // block_size)
    if len(table) != need:
        raise ValueError("bad table length")
    fresh = allocator.allocate()
    if num_tokens % block_size == 0:
        return list(table) + [fresh], None
    last = table[-1]
    if allocator.ref_count(last) > 1:
        allocator.free(last)
        new = list(table)
        new[-1] = fresh
        return new, (last, fresh)
    allocator.free(fresh)
    return list(table), None
