# BREAKS: "Take a block ... only from allocator.allocate()".
# Input: any boundary/CoW case: the block is marked used in _refs but stays in the free heap, so the next
#   allocate() hands it out again (two tables write the same block).
# Bug: picks the lowest block with ref count 0 and sets _refs directly.
from infopt.llm.paged_blocks import BlockAllocator, OutOfBlocks


def _take(allocator):
    for b in range(allocator.num_blocks):
        if allocator.ref_count(b) == 0:
            allocator._refs[b] = 1
            return b
    raise OutOfBlocks("no free block")


def append_slot(allocator, table, num_tokens, block_size):
    need = -(-num_tokens // block_size)
    if len(table) != need:
        raise ValueError("bad table length")
    if num_tokens % block_size == 0:
        return list(table) + [_take(allocator)], None
    last = table[-1]
    if allocator.ref_count(last) > 1:
        fresh = _take(allocator)
        allocator.free(last)
        new = list(table)
        new[-1] = fresh
        return new, (last, fresh)
    return list(table), None
