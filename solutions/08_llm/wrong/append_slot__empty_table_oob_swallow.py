# BREAKS: "When no block is free ... let it propagate".
# Input: empty table, num_tokens=0, no free block -> returns ([], None) instead of raising.
# Bug: swallows OutOfBlocks for a sequence's very first token.
from infopt.llm.paged_blocks import BlockAllocator, OutOfBlocks


def append_slot(allocator, table, num_tokens, block_size):
    need = -(-num_tokens // block_size)
    if len(table) != need:
        raise ValueError("bad table length")
    if not table:
        try:
            return [allocator.allocate()], None
        except OutOfBlocks:
            return [], None
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
