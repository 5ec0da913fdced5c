def append_slot(allocator: BlockAllocator, table: list[int], num_tokens: int,
                block_size: int) -> tuple[list[int], tuple[int, int] | None]:
    """Catches OutOfBlocks and carries on with the table as it was."""
    need = -(-num_tokens // block_size)
    if len(table) != need:
        raise ValueError(f"{num_tokens} tokens in blocks of {block_size} need {need} blocks; the table has "
                         f"{len(table)}")
    if num_tokens % block_size == 0:
        try:
            return list(table) + [allocator.allocate()], None
        except OutOfBlocks:
            return list(table), None
    last = table[-1]
    if allocator.ref_count(last) > 1:
        fresh = allocator.allocate()
        allocator.free(last)
        return list(table[:-1]) + [fresh], (last, fresh)
    return list(table), None
