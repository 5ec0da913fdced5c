# BREAKS: "writing it there must not change what any other table reads".
# Input: block X handed out by an earlier call, then forked (ref 2); append into X (partly filled) -> no copy.
# Bug: remembers blocks it allocated in a module-level set and treats them as always exclusive.
from infopt.llm.paged_blocks import BlockAllocator, OutOfBlocks


_OWNED = set()


def append_slot(allocator, table, num_tokens, block_size):
    need = -(-num_tokens // block_size)
    if len(table) != need:
        raise ValueError("bad table length")
    if num_tokens % block_size == 0:
        b = allocator.allocate()
        _OWNED.add(b)
        return list(table) + [b], None
    last = table[-1]
    if last not in _OWNED and allocator.ref_count(last) > 1:
        fresh = allocator.allocate()
        allocator.free(last)
        _OWNED.add(fresh)
        new = list(table)
        new[-1] = fresh
        return new, (last, fresh)
    return list(table), None
