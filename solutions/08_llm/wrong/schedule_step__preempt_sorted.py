from infopt.llm.scheduler import SeqView, StepPlan


def schedule_step(waiting: list[SeqView], running: list[SeqView], free_blocks: int, block_size: int,
                  max_batch: int) -> StepPlan:
    """Preempt the latest arrivals until every running sequence's next token fits, then admit FCFS."""
    def blocks(s: SeqView) -> int:
        return -(-s.num_tokens // block_size)

    active = list(running)
    needed = sum(1 for s in active if s.num_tokens % block_size == 0)
    free = free_blocks
    preempt = []
    while needed > free:
        victim = max(active, key=lambda s: (s.arrival_s, s.seq_id))
        active.remove(victim)
        preempt.append(int(victim.seq_id))
        free += blocks(victim)
        if victim.num_tokens % block_size == 0:
            needed -= 1
    left = free - needed
    batch = len(active)
    admit = []
    for s in sorted(waiting, key=lambda s: (s.arrival_s, s.seq_id)):
        if batch >= max_batch or blocks(s) > left:
            break
        admit.append(int(s.seq_id))
        left -= blocks(s)
        batch += 1
    return StepPlan(preempt=sorted(preempt), run=[int(s.seq_id) for s in active], admit=admit)
