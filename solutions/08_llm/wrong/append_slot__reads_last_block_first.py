def append_slot(allocator: BlockAllocator, table: list[int], num_tokens: int,
                block_size: int) -> tuple[list[int], tuple[int, int] | None]:
    """Looks at the last block before the boundary test, so an empty table raises IndexError."""
    need = -(-num_tokens // block_size)
    if len(table) != need:
        raise ValueError(f"{num_tokens} tokens in blocks of {block_size} need {need} blocks; the table has "
                         f"{len(table)}")
    last = table[-1]
    if num_tokens % block_size == 0:
        return list(table) + [allocator.allocate()], None
    if allocator.ref_count(last) > 1:
        fresh = allocator.allocate()
        allocator.free(last)
        return list(table[:-1]) + [fresh], (last, fresh)
    return list(table), None
