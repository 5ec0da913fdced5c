from infopt.llm.scheduler import SeqView, StepPlan


def schedule_step(waiting: list[SeqView], running: list[SeqView], free_blocks: int, block_size: int,
                  max_batch: int) -> StepPlan:
    """First fit: a waiting sequence that does not fit is skipped and the next one tried."""
    def blocks(s: SeqView) -> int:
        return -(-s.num_tokens // block_size)

    def needs(s: SeqView) -> bool:
        return s.num_tokens % block_size == 0

    active = list(running)
    free = free_blocks
    needed = sum(needs(s) for s in active)
    preempt = []
    while needed > free:
        victim = max(active, key=lambda s: (s.arrival_s, s.seq_id))
        active.remove(victim)
        preempt.append(victim.seq_id)
        free += blocks(victim)
        needed -= needs(victim)
    left, batch, admit = free - needed, len(active), []
    for s in sorted(waiting, key=lambda s: (s.arrival_s, s.seq_id)):
        if batch >= max_batch:
            break
        if blocks(s) > left:
            continue
        admit.append(s.seq_id)
        left -= blocks(s)
        batch += 1
    return StepPlan(preempt=preempt, run=[s.seq_id for s in active], admit=admit)
