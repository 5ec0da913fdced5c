"""Disaggregated prefill/decode (DistServe, Splitwise, vLLM's and TensorRT-LLM's disaggregated serving), simulated
with the same scheduler and cache as the real engine and a cost model fitted to the real engine's steps.

Colocated: each machine runs ``ContinuousEngine`` on its share of the requests, so a long prefill stalls every
decode in its step (TPOT suffers) and decodes delay prefills (TTFT suffers). Disaggregated: prefill machines run
only prompts (each request's first token comes from there), the KV cache crosses a link
(``CostModel.transfer_s``: bytes / bandwidth), and decode machines run only decodes, admitting arrived caches with
the same ``schedule_step``. Both sides are ``ContinuousEngine(model=None, cost=...)``: the blocks are counted
exactly, the arithmetic is skipped, and the clock is the cost model's.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from .engine import ContinuousEngine
from .run_stats import CostModel, RequestStats, RunStats
from .traces import Request


@dataclass
class PoolStats:
    """Per-request stats of a set of machines serving one trace together, with the summary figures."""

    requests: list[RequestStats]

    def summary(self) -> dict[str, float]:
        """Throughput and the p50 / p99 of TTFT, TPOT and latency (same keys as ``RunStats.summary``)."""
        return RunStats(requests=self.requests, steps=[], num_blocks=0, block_size=1, peak_blocks=0,
                        preemptions=0).summary()


def _split(trace: Sequence[Request], n: int) -> list[list[Request]]:
    """Round-robin by arrival: what a load balancer in front of ``n`` identical machines does."""
    order = sorted(trace, key=lambda r: (r.arrival_s, r.req_id))
    return [order[i::n] for i in range(n)]


def simulate_colocated(trace: Sequence[Request], cost: CostModel, machines: int = 2, num_blocks: int = 256,
                       block_size: int = 16, max_batch: int = 16, token_budget: int | None = None) -> PoolStats:
    """``machines`` engines, each doing prefill and decode for its round-robin share of the trace."""
    reqs: list[RequestStats] = []
    for part in _split(trace, machines):
        if part:
            eng = ContinuousEngine(None, num_blocks, block_size, max_batch, token_budget=token_budget, cost=cost)
            reqs += eng.run(part).requests
    return PoolStats(sorted(reqs, key=lambda r: r.req_id))


def simulate_disaggregated(trace: Sequence[Request], cost: CostModel, prefill_machines: int = 1,
                           decode_machines: int = 1, num_blocks: int = 256, block_size: int = 16,
                           max_batch: int = 16, prefill_batch: int = 4) -> PoolStats:
    """Prefill machines make each request's first token; its KV cache then crosses the link to a decode machine,
    which decodes the rest. TTFT comes from the prefill side, TPOT includes the transfer and the decode queue."""
    first: dict[int, RequestStats] = {}
    for part in _split(trace, prefill_machines):
        if part:
            eng = ContinuousEngine(None, num_blocks, block_size, prefill_batch, cost=cost)
            for r in eng.run([replace(q, max_new_tokens=1) for q in part]).requests:
                first[r.req_id] = r
    done = {r.req_id: first[r.req_id] for r in trace if r.max_new_tokens == 1}   # nothing left to decode
    rest = [r for r in trace if r.max_new_tokens > 1]
    handoff = {r.req_id: (first[r.req_id].first_token_s + cost.transfer_s(len(r.prompt_ids)),
                          first[r.req_id].first_token_s) for r in rest}
    for part in _split(rest, decode_machines):
        if part:
            eng = ContinuousEngine(None, num_blocks, block_size, max_batch, cost=cost)
            sub = {r.req_id: handoff[r.req_id] for r in part}
            for r in eng.run(part, handoff=sub).requests:
                done[r.req_id] = r
    return PoolStats(sorted(done.values(), key=lambda r: r.req_id))


def compare_disaggregated(trace: Sequence[Request], cost: CostModel, machines: int = 2, num_blocks: int = 256,
                          block_size: int = 16, max_batch: int = 16, token_budget: int | None = None
                          ) -> dict[str, dict[str, float]]:
    """The same trace on ``machines`` colocated engines (whole prefills, and chunked under ``token_budget`` when
    given) and on machines // 2 prefill + the rest decode machines: each one's summary, by name."""
    if machines < 2:
        raise ValueError(f"disaggregation needs at least 2 machines (one prefill, one decode), got {machines}")
    out = {"colocated": simulate_colocated(trace, cost, machines, num_blocks, block_size, max_batch).summary()}
    if token_budget is not None:
        out["colocated_chunked"] = simulate_colocated(trace, cost, machines, num_blocks, block_size, max_batch,
                                                      token_budget).summary()
    p = machines // 2
    out["disaggregated"] = simulate_disaggregated(trace, cost, p, machines - p, num_blocks, block_size,
                                                  max_batch).summary()
    return out
