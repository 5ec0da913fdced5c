# BREAKS: "the caller's list stays as it was".
# Input: table too long (e.g. 3 blocks for num_tokens=5, block_size=4) -> trims the caller's list, then raises.
# Bug: "repairs" the caller's table in place before complaining.
from infopt.llm.paged_blocks import BlockAllocator, OutOfBlocks


def append_slot(allocator, table, num_tokens, block_size):
    need = -(-num_tokens // block_size)
    if len(table) != need:
        extra = len(table) - need
        if extra > 0:
            del table[need:]
        raise ValueError(f"table had {extra} block(s) too many/too few")
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
