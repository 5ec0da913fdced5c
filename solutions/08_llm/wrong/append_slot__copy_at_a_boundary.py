def append_slot(allocator: BlockAllocator, table: list[int], num_tokens: int,
                block_size: int) -> tuple[list[int], tuple[int, int] | None]:
    """Copies a shared last block before looking at the boundary, so a full shared block is copied for nothing."""
    need = -(-num_tokens // block_size)
    if len(table) != need:
        raise ValueError(f"{num_tokens} tokens in blocks of {block_size} need {need} blocks; the table has "
                         f"{len(table)}")
    new, copy = list(table), None
    if table and allocator.ref_count(table[-1]) > 1:
        fresh = allocator.allocate()
        allocator.free(table[-1])
        new, copy = new[:-1] + [fresh], (table[-1], fresh)
    if num_tokens % block_size == 0:
        new.append(allocator.allocate())
    return new, copy
