"""Serving engines on the real tiny model: continuous (in-flight) batching and static batching, one paged KV cache.

``ContinuousEngine`` runs a trace step by step: each step asks ``schedule_step`` what to preempt and admit, runs ONE
batched forward that decodes a token for every running sequence through ``PagedKVCache``, then ONE forward that
prefills the admitted ones (whole, or in chunks under a per-step token budget: chunked prefill; rows padded to the
longest chunk, each at its own positions), and retires the finished. A preempted
sequence either loses its cache and is recomputed later (prompt plus what it generated, as one prefill) or has its
blocks swapped to a CPU store and back. ``StaticEngine`` waits for a full batch, reserves each request's whole
length, and runs the batch to completion before it takes the next one.

The clock is virtual: it advances by each step's measured wall time (or, given a ``CostModel``, by its modelled
time), and requests arrive at the trace's times (an idle engine jumps to the next arrival; nothing sleeps). With
``model=None`` and a cost model the same engines simulate: the cache's blocks are reserved exactly as the real run
would, with no arithmetic (the batching explorer and the disaggregation study run this way in milliseconds).
Decoding is greedy and ignores EOS (every request generates its ``max_new_tokens``, as vLLM's benchmarks do with
``ignore_eos``), so the tokens equal each request's own greedy generation whatever the batching. The measurements
(``RunStats``, ``CostModel``) live in ``infopt.llm.run_stats``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from .paged_blocks import num_blocks_for
# fit_cost_model is not used here: it is imported so the notebook can take the engine and its fit from one place
from .run_stats import CostModel, RequestStats, RunStats, StepLog, fit_cost_model  # noqa: F401
from .scheduler import SeqView, schedule_step
from .traces import Request


@dataclass
class _Seq:
    req: Request
    tokens: list[int]          # prompt + generated
    cached: int = 0            # tokens stored in the cache
    state: str = "waiting"     # waiting | prefill | running | swapped | remote (KV arriving) | done
    stats: RequestStats | None = None

    @property
    def generated(self) -> int:
        return len(self.tokens) - len(self.req.prompt_ids)

    @property
    def done(self) -> bool:
        return self.generated >= self.req.max_new_tokens

    def view(self) -> SeqView:
        # running: tokens in the cache; in prefill: the whole prompt (its blocks are reserved); waiting, swapped or
        # remote: everything it has, which is what a recompute prefills (and what a swap-in plus this step's
        # decode hold)
        n = self.cached if self.state == "running" else len(self.tokens)
        return SeqView(self.req.req_id, self.req.arrival_s, n)


def _check_trace(trace: Sequence[Request], max_seq_len: int) -> None:
    ids = [r.req_id for r in trace]
    if len(set(ids)) != len(ids):
        raise ValueError("the trace has repeated req_id values; each request needs its own id")
    for r in trace:
        if not r.prompt_ids or r.max_new_tokens < 1:
            raise ValueError(f"request {r.req_id} needs a non-empty prompt and max_new_tokens >= 1")
        if len(r.prompt_ids) + r.max_new_tokens > max_seq_len:
            raise ValueError(f"request {r.req_id}: prompt {len(r.prompt_ids)} + {r.max_new_tokens} new tokens exceed "
                             f"the model's max_seq_len {max_seq_len}")


class _EngineBase:
    """What both engines share: the sequences' states, the paged cache, batched decode, prefill, the clock."""

    def __init__(self, model: Any, num_blocks: int, block_size: int = 16, cost: CostModel | None = None) -> None:
        from .model import TARGET_CONFIG
        from .paged import PagedKVCache

        if not isinstance(num_blocks, int) or num_blocks < 1:
            raise ValueError(f"num_blocks must be a positive int, got {num_blocks!r}")
        if model is None and cost is None:
            raise ValueError("without a model the engine only simulates: pass cost=CostModel(...) for its clock")
        self.model = model
        self.cost = cost
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.config = TARGET_CONFIG if model is None else model.config
        self.cache = PagedKVCache(self.config, num_blocks, block_size)

    # ----- the cache, as the scheduler counts it
    def free_blocks(self) -> int:
        """Blocks of the pool no sequence holds."""
        return self.num_blocks - self.cache.blocks_used

    # ----- model work
    def _decode(self, seqs: list[_Seq]) -> None:
        """ONE forward for all: each sequence's last token at its position; appends the greedy next token."""
        import torch

        if not seqs:
            return
        if self.model is None:   # simulation: the blocks, not the math
            self.cache.reserve([(s.req.req_id, s.cached, s.cached + 1) for s in seqs])
            nxt = [0] * len(seqs)
        else:
            toks = torch.tensor([[s.tokens[s.cached]] for s in seqs])
            pos = torch.tensor([[s.cached] for s in seqs])
            logits = self.model(toks, pos, cache=self.cache, seq_ids=[s.req.req_id for s in seqs])
            nxt = logits[:, -1].argmax(-1).tolist()
        for s, t in zip(seqs, nxt):
            s.cached += 1
            s.tokens.append(int(t))

    def _prefill(self, chunks: list[tuple[_Seq, int]]) -> None:
        """Store the next ``n`` not-yet-cached tokens of each (s, n), all in ONE forward (rows padded on the right,
        each at its own positions: ``PagedKVCache.prepare``); a sequence whose prompt that completes gets its next
        token appended."""
        import torch

        if not chunks:
            return
        for s, _ in chunks:
            if s.cached == 0:
                self.cache.add_sequence(s.req.req_id)
        parts = [s.tokens[s.cached:s.cached + n] for s, n in chunks]
        ids = [s.req.req_id for s, _ in chunks]
        if self.model is None:
            self.cache.reserve([(sid, s.cached, s.cached + len(c)) for sid, (s, _), c in zip(ids, chunks, parts)])
            nxt = [0] * len(chunks)
        else:
            width = max(map(len, parts))
            pos = self.cache.prepare(ids, [s.cached for s, _ in chunks], [len(c) for c in parts])
            toks = torch.tensor([c + [c[-1]] * (width - len(c)) for c in parts])
            logits = self.model(toks, pos, cache=self.cache, seq_ids=ids)
            last = torch.tensor([len(c) - 1 for c in parts])
            nxt = logits[torch.arange(len(parts)), last].argmax(-1).tolist()
        for (s, _), chunk, t in zip(chunks, parts, nxt):
            s.cached += len(chunk)
            if s.cached == len(s.tokens):
                s.tokens.append(int(t))
                s.state = "running"

    # ----- the run loop
    def _plan_and_run(self, arrived: list[_Seq], log: dict) -> None:
        raise NotImplementedError

    def run(self, trace: Sequence[Request], handoff: Mapping[int, tuple[float, float]] | None = None) -> RunStats:
        """Serve every request of ``trace`` and return the per-request, per-step and summary figures.

        ``handoff`` (simulation only; disaggregated serving's decode side): req_id -> (ready_s, first_token_s): the
        request was prefilled elsewhere, produced its first token at first_token_s, and its KV cache arrives here at
        ready_s; it then waits like a swapped-out sequence and decodes from the step it is admitted in."""
        import torch

        _check_trace(trace, self.config.max_seq_len)
        if handoff is not None:
            if not isinstance(self, ContinuousEngine):
                raise ValueError("handoff needs a ContinuousEngine (the decode side of disaggregated serving)")
            if self.model is not None:
                raise ValueError("handoff is for the model-free simulation (model=None): a real KV cache cannot "
                                 "arrive from another machine here")
            missing = [r.req_id for r in trace if r.req_id not in handoff]
            if missing:
                raise ValueError(f"handoff has no (ready_s, first_token_s) for requests {missing[:5]}")
        ready = {r.req_id: (handoff[r.req_id][0] if handoff else r.arrival_s) for r in trace}
        pending = sorted(trace, key=lambda r: (ready[r.req_id], r.req_id))
        self.seqs: list[_Seq] = []
        self.clock = 0.0
        steps: list[StepLog] = []
        peak = 0
        self.preemptions = 0
        i = 0
        with torch.inference_mode():
            while i < len(pending) or any(s.state != "done" for s in self.seqs):
                while i < len(pending) and ready[pending[i].req_id] <= self.clock:
                    r = pending[i]
                    seq = _Seq(r, list(r.prompt_ids), stats=RequestStats(r.req_id, r.arrival_s, len(r.prompt_ids), []))
                    if handoff:
                        seq.tokens.append(0)
                        seq.cached, seq.state = len(r.prompt_ids), "remote"
                        seq.stats.first_token_s = handoff[r.req_id][1]
                    self.seqs.append(seq)
                    i += 1
                live = [s for s in self.seqs if s.state != "done"]
                self.all_arrived = i == len(pending)
                if not live or not self._has_work(live):
                    self.clock = max(self.clock, ready[pending[i].req_id])   # idle: jump to the next arrival
                    continue
                t0 = time.perf_counter()
                log: dict = {"decoded": [], "prefilled": {}, "admitted": [], "preempted": [], "finished": []}
                self._plan_and_run(live, log)
                dt = time.perf_counter() - t0 if self.cost is None else self.cost.step_s(log)
                self.clock += dt
                for s in live:
                    if s.state in ("running", "prefill") and s.generated >= 1 and np.isnan(s.stats.first_token_s):
                        s.stats.first_token_s = self.clock
                    if s.state == "running" and s.done:
                        self.cache.free(s.req.req_id)
                        s.state = "done"
                        s.stats.finish_s = self.clock
                        s.stats.tokens = s.tokens[len(s.req.prompt_ids):]
                        log["finished"].append(s.req.req_id)
                used = self.num_blocks - self.free_blocks()
                peak = max(peak, used)
                steps.append(StepLog(step=len(steps), clock_s=self.clock, seconds=dt, tables=self.cache.block_tables(),
                                     lengths={sid: self.cache.length(sid) for sid in self.cache.seq_ids},
                                     swapped=[s.req.req_id for s in live if s.state == "swapped"],
                                     waiting=[s.req.req_id for s in live
                                              if s.state in ("waiting", "swapped", "remote")],
                                     free_blocks=self.free_blocks(), **log))
        reqs = sorted((s.stats for s in self.seqs), key=lambda r: r.req_id)
        return RunStats(requests=reqs, steps=steps, num_blocks=self.num_blocks, block_size=self.block_size,
                        peak_blocks=peak, preemptions=self.preemptions)

    def _has_work(self, live: list[_Seq]) -> bool:
        return True


class ContinuousEngine(_EngineBase):
    """Continuous batching: every step, ``schedule_step`` preempts and admits, then one batched decode runs.

    ``token_budget`` (chunked prefill): at most this many tokens per step, decodes first (one each), the rest to
    prefill chunks in arrival order; None prefills each admitted prompt whole in its admission step.
    ``preemption``: "recompute" drops a preempted sequence's cache (it is prefilled again, prompt plus output, when
    readmitted); "swap" copies its blocks to the CPU store and back (it decodes in the step it is swapped in)."""

    def __init__(self, model: Any, num_blocks: int, block_size: int = 16, max_batch: int = 16,
                 token_budget: int | None = None, preemption: str = "recompute", cost: CostModel | None = None) -> None:
        super().__init__(model, num_blocks, block_size, cost)
        if preemption not in ("recompute", "swap"):
            raise ValueError(f"preemption must be 'recompute' or 'swap', got {preemption!r}")
        if token_budget is not None and (not isinstance(token_budget, int) or token_budget < 1):
            raise ValueError(f"token_budget must be None or a positive int, got {token_budget!r}")
        self.max_batch = max_batch
        self.token_budget = token_budget
        self.preemption = preemption

    def _reserved(self, live: list[_Seq]) -> int:
        """Blocks promised to prompts still being prefilled in chunks but not yet allocated."""
        bs = self.block_size
        return sum(num_blocks_for(len(s.tokens), bs) - num_blocks_for(s.cached, bs)
                   for s in live if s.state == "prefill")

    def _plan_and_run(self, live: list[_Seq], log: dict) -> None:
        by_id = {s.req.req_id: s for s in live}
        running = [s for s in live if s.state in ("running", "prefill")]
        waiting = [s for s in live if s.state in ("waiting", "swapped", "remote")]
        plan = schedule_step([s.view() for s in waiting], [s.view() for s in running],
                             max(0, self.free_blocks() - self._reserved(live)), self.block_size, self.max_batch)
        for sid in plan.preempt:
            s = by_id[sid]
            if self.preemption == "swap" and s.state == "running":
                self.cache.swap_out(sid)
                s.state = "swapped"
            else:
                if s.cached:
                    self.cache.free(sid)
                s.cached = 0
                s.state = "waiting"
            s.stats.preemptions += 1
            self.preemptions += 1
        log["preempted"] = list(plan.preempt)
        log["admitted"] = list(plan.admit)
        decode = [by_id[sid] for sid in plan.run if by_id[sid].state == "running"]
        prefill = [by_id[sid] for sid in plan.run if by_id[sid].state == "prefill"]
        for sid in plan.admit:
            s = by_id[sid]
            if s.state in ("swapped", "remote"):
                if s.state == "swapped":
                    self.cache.swap_in(sid)
                else:   # its KV arrived from a prefill machine: into fresh blocks
                    self.cache.reserve([(sid, 0, s.cached)])
                s.state = "running"
                decode.append(s)
            else:
                s.state = "prefill"
                prefill.append(s)
        if not decode and not prefill:
            head = min(waiting, key=lambda s: (s.req.arrival_s, s.req.req_id))
            raise ValueError(f"request {head.req.req_id} needs {head.view().num_tokens} tokens of KV cache, more "
                             f"than all {self.num_blocks} blocks of {self.block_size} hold: build the engine with "
                             "more blocks")
        self._decode(decode)
        log["decoded"] = [s.req.req_id for s in decode]
        budget = None if self.token_budget is None else max(0, self.token_budget - len(decode))
        chunks = []
        for s in prefill:
            n = len(s.tokens) - s.cached
            if budget is not None:
                n = min(n, budget)
                budget -= n
            if n > 0:
                chunks.append((s, n))
                log["prefilled"][s.req.req_id] = n
        self._prefill(chunks)


class StaticEngine(_EngineBase):
    """Static batching: wait until ``batch_size`` requests are waiting (or no more will come), admit them (each
    reserving blocks for its whole prompt plus output), prefill them, decode them together until the last one is
    done; only then take the next batch."""

    def __init__(self, model: Any, num_blocks: int, block_size: int = 16, batch_size: int = 8,
                 cost: CostModel | None = None) -> None:
        super().__init__(model, num_blocks, block_size, cost)
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        self.batch_size = batch_size
        self._reserve = 0

    def _has_work(self, live: list[_Seq]) -> bool:
        if any(s.state == "running" for s in live):
            return True
        return len(live) >= self.batch_size or self.all_arrived

    def _plan_and_run(self, live: list[_Seq], log: dict) -> None:
        running = [s for s in live if s.state == "running"]
        if not running:
            free = self.free_blocks()
            batch = []
            for s in sorted(live, key=lambda s: (s.req.arrival_s, s.req.req_id))[:self.batch_size]:
                need = num_blocks_for(len(s.req.prompt_ids) + s.req.max_new_tokens, self.block_size)
                if need > free:
                    break
                free -= need
                batch.append(s)
            if not batch:
                s = live[0]
                raise ValueError(f"request {s.req.req_id} needs more KV blocks than the cache has ({self.num_blocks} "
                                 f"of {self.block_size} tokens): build the engine with more blocks")
            for s in batch:
                s.state = "prefill"
            self._prefill([(s, len(s.tokens)) for s in batch])
            log["admitted"] = [s.req.req_id for s in batch]
            log["prefilled"] = {s.req.req_id: len(s.req.prompt_ids) for s in batch}
            return
        self._decode(running)
        log["decoded"] = [s.req.req_id for s in running]


def batching_curve(cost: CostModel, rate_per_s: float, batch_limits: Sequence[int], n: int = 60, seed: int = 0,
                   num_blocks: int = 256, block_size: int = 16, prompt_len: tuple[int, int] = (16, 96),
                   output_len: tuple[int, int] = (8, 64), text: str | None = None,
                   token_budget: int | None = None) -> list[dict[str, float]]:
    """Throughput and latency percentiles of the continuous engine (model-free, ``cost``'s clock) on one seeded
    Poisson trace at ``rate_per_s``, for each batch limit: the throughput/latency trade-off the explorer draws."""
    from .traces import poisson_trace

    trace = poisson_trace(n, rate_per_s, seed, prompt_len, output_len, text)
    rows = []
    for b in batch_limits:
        st = ContinuousEngine(None, num_blocks, block_size, int(b), token_budget=token_budget, cost=cost).run(trace)
        rows.append({"max_batch": float(b), **st.summary()})
    return rows


def parallel_sampling_log(model: Any, prompt_ids: Sequence[int], n: int = 3, max_new_tokens: int = 12,
                          block_size: int = 4, num_blocks: int = 32) -> RunStats:
    """``n`` continuations of one prompt sharing its blocks (vLLM's parallel sampling): the prompt is prefilled
    once as sequence 0, forked into 1..n-1 (every prompt block's ref count becomes n), sequence i starts from the
    prompt's i-th most likely next token and then decodes greedily, all in one batched forward per step; the first
    write into the shared last block copies it (copy-on-write). The per-step log shows the sharing."""
    import torch

    from .paged import PagedKVCache

    if n < 1 or max_new_tokens < 1 or len(prompt_ids) < 1:
        raise ValueError(f"need n >= 1, max_new_tokens >= 1 and a prompt, got n={n}, "
                         f"max_new_tokens={max_new_tokens}, {len(prompt_ids)} prompt tokens")
    cache = PagedKVCache(model.config, num_blocks, block_size)
    steps: list[StepLog] = []
    t_start = time.perf_counter()

    def log(**kw: Any) -> None:
        ids = cache.seq_ids
        steps.append(StepLog(step=len(steps), clock_s=time.perf_counter() - t_start, seconds=0.0,
                             tables=cache.block_tables(), lengths={i: cache.length(i) for i in ids}, swapped=[],
                             waiting=[], free_blocks=cache.num_free_blocks, **{
                                 "decoded": [], "prefilled": {}, "admitted": [], "preempted": [], "finished": [],
                                 **kw}))

    with torch.inference_mode():
        p = len(prompt_ids)
        logits = model(torch.tensor([list(prompt_ids)]), torch.arange(p)[None], cache=cache, seq_ids=[0])
        firsts = logits[0, -1].argsort(descending=True)[:n].tolist()
        log(prefilled={0: p}, admitted=[0])
        for i in range(1, n):
            cache.fork(0, i)
        tokens = {i: [int(firsts[i])] for i in range(n)}
        log(admitted=list(range(1, n)))
        for _ in range(max_new_tokens - 1):
            ids = list(range(n))
            toks = torch.tensor([[tokens[i][-1]] for i in ids])
            pos = torch.tensor([[cache.length(i)] for i in ids])
            nxt = model(toks, pos, cache=cache, seq_ids=ids)[:, -1].argmax(-1).tolist()
            for i, t in zip(ids, nxt):
                tokens[i].append(int(t))
            log(decoded=ids)
        reqs = [RequestStats(i, 0.0, p, tokens[i], first_token_s=steps[0].clock_s, finish_s=steps[-1].clock_s)
                for i in range(n)]
        peak = num_blocks - min(s.free_blocks for s in steps)
        for i in range(n):
            cache.free(i)
        steps[-1].finished.extend(range(n))
    return RunStats(requests=reqs, steps=steps, num_blocks=num_blocks, block_size=block_size, peak_blocks=peak,
                    preemptions=0, extra={"copy_on_write_copies": cache.copies_done})
