def append_slot(allocator: BlockAllocator, table: list[int], num_tokens: int,
                block_size: int) -> tuple[list[int], tuple[int, int] | None]:
    """Writes into a shared last block (no copy-on-write): the fork sees the other sequence's token."""
    if len(table) != -(-num_tokens // block_size):
        raise ValueError(f"{num_tokens} tokens in blocks of {block_size} need {-(-num_tokens // block_size)} "
                         f"blocks; the table has {len(table)}")
    if num_tokens % block_size == 0:
        return list(table) + [allocator.allocate()], None
    last = table[-1]
    return list(table), None
