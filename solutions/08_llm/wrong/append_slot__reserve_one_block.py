# BREAKS: "When no block is free, allocator.allocate() raises OutOfBlocks" (raise only then).
# Input: exactly one free block, at a block boundary -> raises OutOfBlocks though one block is free.
# Bug: keeps one block in reserve (num_free < 2 treated as out of blocks).
from infopt.llm.paged_blocks import BlockAllocator, OutOfBlocks


def append_slot(allocator, table, num_tokens, block_size):
    need = -(-num_tokens // block_size)
    if len(table) != need:
        raise ValueError("bad table length")
    last = table[-1] if table else None
    needs_block = num_tokens % block_size == 0 or allocator.ref_count(last) > 1
    if needs_block and allocator.num_free < 2:
        raise OutOfBlocks("no spare block")
    if num_tokens % block_size == 0:
        return list(table) + [allocator.allocate()], None
    if allocator.ref_count(last) > 1:
        fresh = allocator.allocate()
        allocator.free(last)
        new = list(table)
        new[-1] = fresh
        return new, (last, fresh)
    return list(table), None
