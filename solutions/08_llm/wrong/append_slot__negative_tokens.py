# BREAKS: "Raise ValueError when len(table) is not ceil(num_tokens / block_size)" -- with num_tokens=-5, block_size=4,
#   ceil = -1, and [] has length 0: must raise; this allocates a block.
# Bug: validation via max(0, ...).
from infopt.llm.paged_blocks import BlockAllocator, OutOfBlocks


def append_slot(allocator, table, num_tokens, block_size):
    need = max(0, -(-num_tokens // block_size))
    if len(table) != need:
        raise ValueError("bad table length")
    if num_tokens % block_size == 0 or not table:
        return list(table) + [allocator.allocate()], None
    last = table[-1]
    if allocator.ref_count(last) > 1:
        fresh = allocator.allocate()
        allocator.free(last)
        new = list(table)
        new[-1] = fresh
        return new, (last, fresh)
    return list(table), None
