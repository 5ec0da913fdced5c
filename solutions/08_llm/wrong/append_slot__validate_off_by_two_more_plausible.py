# BREAKS: "Raise ValueError when len(table) is not ceil(num_tokens / block_size)".
# Input: table of 2 blocks, num_tokens=7, block_size=2 (needs 4) -> no ValueError; returns the table as is.
# Bug: only odd length differences are detected (a parity-style check).
from infopt.llm.paged_blocks import BlockAllocator, OutOfBlocks


def append_slot(allocator, table, num_tokens, block_size):
    need = -(-num_tokens // block_size)
    if len(table) not in (need,) and not (len(table) - need) % 2 == 0:
        raise ValueError("bad table length")

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
