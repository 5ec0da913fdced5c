"""One step of a continuous-batching scheduler with preemption (vLLM v0's policy), on plain numbers.

``schedule_step`` sees each sequence only as a ``SeqView`` (id, arrival time, token count) and the number of free
KV-cache blocks, and decides which running sequences to preempt, which keep decoding and which waiting ones to
admit. It knows nothing of torch or of the cache: the engines in ``infopt.llm.engine`` carry its plan out, and the
cost-model simulator in ``infopt.llm.disaggregated`` replays it without a model. (Exercise 4's reference.)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from .paged_blocks import num_blocks_for


@dataclass(frozen=True)
class SeqView:
    """What the scheduler sees of one sequence.

    ``num_tokens``: for a running sequence, the tokens stored in the cache; for a waiting one, its prompt plus
    anything generated before a preemption, all to be (re)computed when it is admitted.
    """

    seq_id: int
    arrival_s: float
    num_tokens: int


@dataclass
class StepPlan:
    """The scheduler's decision for one step: sequence ids to preempt (in the order they were chosen), running ones
    that decode this step (in their given order), and waiting ones admitted (in arrival order)."""

    preempt: list[int] = field(default_factory=list)
    run: list[int] = field(default_factory=list)
    admit: list[int] = field(default_factory=list)


def _check(waiting: Sequence[SeqView], running: Sequence[SeqView], free_blocks: int, block_size: int,
           max_batch: int) -> None:
    if not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"block_size must be a positive int, got {block_size!r}")
    if not isinstance(max_batch, int) or max_batch < 1:
        raise ValueError(f"max_batch must be a positive int, got {max_batch!r}")
    if not isinstance(free_blocks, int) or free_blocks < 0:
        raise ValueError(f"free_blocks must be an int >= 0, got {free_blocks!r}")
    seen: set[int] = set()
    for kind, views in (("waiting", waiting), ("running", running)):
        for v in views:
            if not isinstance(v, SeqView):
                raise TypeError(f"{kind} must hold SeqView objects, got {type(v).__name__}")
            if v.num_tokens < 1:
                raise ValueError(f"{kind} sequence {v.seq_id} has num_tokens={v.num_tokens}; every sequence has "
                                 "at least one token (its prompt)")
            if v.seq_id in seen:
                raise ValueError(f"seq_id {v.seq_id} appears twice in waiting + running; ids must be unique")
            seen.add(v.seq_id)


def schedule_step(waiting: list[SeqView], running: list[SeqView], free_blocks: int, block_size: int,
                  max_batch: int) -> StepPlan:
    """Plan one step: preempt the latest arrivals until every remaining running sequence's decode fits, then admit
    waiting sequences first-come-first-served while the batch is below ``max_batch`` and their blocks fit.

    1. Each running sequence decodes one token; it needs a new block iff ``num_tokens % block_size == 0``. While the
       blocks needed exceed the free blocks, preempt the running sequence that arrived last (largest ``arrival_s``;
       ties: higher ``seq_id``): its ``ceil(num_tokens / block_size)`` blocks return to the pool and it no longer
       needs a block.
    2. Then take the waiting sequences in arrival order (``arrival_s``, ties: lower ``seq_id`` first) and admit each
       while the batch (running minus preempted plus admitted) is below ``max_batch`` and its
       ``ceil(num_tokens / block_size)`` blocks fit in what is left; stop at the first that does not (no skipping).
       A sequence preempted in this step is not admitted in it (it waits for the next step).
    The inputs are not mutated.
    """
    _check(waiting, running, free_blocks, block_size, max_batch)
    active = list(running)
    needed = sum(1 for s in active if s.num_tokens % block_size == 0)
    free = free_blocks
    preempt: list[int] = []
    while needed > free:
        victim = max(active, key=lambda s: (s.arrival_s, s.seq_id))
        active.remove(victim)
        preempt.append(victim.seq_id)
        free += num_blocks_for(victim.num_tokens, block_size)
        if victim.num_tokens % block_size == 0:
            needed -= 1
    left = free - needed
    batch = len(active)
    admit: list[int] = []
    for s in sorted(waiting, key=lambda s: (s.arrival_s, s.seq_id)):  # a just-preempted one is not in `waiting`
        need = num_blocks_for(s.num_tokens, block_size)
        if batch >= max_batch or need > left:
            break
        admit.append(s.seq_id)
        left -= need
        batch += 1
    return StepPlan(preempt=preempt, run=[s.seq_id for s in active], admit=admit)
