# BREAKS: "Take a block only when the token needs one".
# Input: table [3] exclusive, num_tokens=1, block_size=4 -> appends a second block.
# Bug: treats a one-block table as "the prompt block" and always starts a new block after it.
from infopt.llm.paged_blocks import BlockAllocator, OutOfBlocks


def append_slot(allocator, table, num_tokens, block_size):
    need = -(-num_tokens // block_size)
    if len(table) != need:
        raise ValueError("bad table length")
    if num_tokens % block_size == 0 or len(table) == 1:
        return list(table) + [allocator.allocate()], None
    last = table[-1]
    if allocator.ref_count(last) > 1:
        fresh = allocator.allocate()
        allocator.free(last)
        new = list(table)
        new[-1] = fresh
        return new, (last, fresh)
    return list(table), None
