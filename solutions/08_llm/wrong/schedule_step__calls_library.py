from infopt.llm.scheduler import SeqView, StepPlan


def schedule_step(waiting: list[SeqView], running: list[SeqView], free_blocks: int, block_size: int,
                  max_batch: int) -> StepPlan:
    """Hands the step to the library's scheduler."""
    from infopt.llm.scheduler import schedule_step as library_step
    return library_step(waiting, running, free_blocks, block_size, max_batch)
