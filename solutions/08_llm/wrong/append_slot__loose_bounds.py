def append_slot(allocator: BlockAllocator, table: list[int], num_tokens: int,
                block_size: int) -> tuple[list[int], tuple[int, int] | None]:
    """Room for token `num_tokens`: a new block at a boundary, else copy-on-write of a shared last block."""
    # the table must cover the tokens already stored, and not more than one block beyond them
    if not (len(table) - 1) * block_size <= num_tokens <= len(table) * block_size:
        raise ValueError(f"a table of {len(table)} blocks of {block_size} cannot hold {num_tokens} tokens")
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
