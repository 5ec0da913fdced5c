# BREAKS: "copy is (src, dst)" (block numbers: ints to index the cache with).
# Input: any CoW case -> copy is (1.0, 2.0), floats: k_cache[src] fails for the caller.
# Bug: block numbers pass through float arithmetic.
from infopt.llm.paged_blocks import BlockAllocator, OutOfBlocks


def append_slot(allocator, table, num_tokens, block_size):
    need = -(-num_tokens // block_size)
    if len(table) != need:
        raise ValueError("bad table length")
    if num_tokens % block_size == 0:
        return list(table) + [allocator.allocate()], None
    last = table[-1]
    if allocator.ref_count(last) > 1:
        fresh = allocator.allocate()
        allocator.free(last)
        new = list(table)
        new[-1] = fresh
        return new, (last * 1.0, fresh * 1.0)
    return list(table), None
