def append_slot(allocator: BlockAllocator, table: list[int], num_tokens: int,
                block_size: int) -> tuple[list[int], tuple[int, int] | None]:
    """Room for token `num_tokens`: a new block at a boundary, else copy-on-write of a shared last block."""
    needed = -(-num_tokens // block_size)
    if table and len(table) != needed:
        raise ValueError(f"a table for {num_tokens} tokens in blocks of {block_size} holds {needed} blocks, "
                         f"this one holds {len(table)}")
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
