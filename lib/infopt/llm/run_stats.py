"""What a serving run measured: per-request timelines (TTFT, TPOT), the per-step log the block-table view replays,
the summary percentiles, and the linear cost model of a step (fitted to a measured run) that clocks simulations.

The engines (``infopt.llm.engine``) fill these; the disaggregation study, the benchmark and the widgets read them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class RequestStats:
    """One request's timeline on the virtual clock (seconds) and its generated tokens."""

    req_id: int
    arrival_s: float
    prompt_len: int
    tokens: list[int]
    first_token_s: float = float("nan")
    finish_s: float = float("nan")
    preemptions: int = 0

    @property
    def ttft(self) -> float:
        """Time to first token: first token's time minus arrival."""
        return self.first_token_s - self.arrival_s

    @property
    def tpot(self) -> float:
        """Time per output token after the first: (finish - first token) / (tokens - 1); nan for one token."""
        n = len(self.tokens)
        return (self.finish_s - self.first_token_s) / (n - 1) if n > 1 else float("nan")

    @property
    def latency(self) -> float:
        """End-to-end latency: finish minus arrival."""
        return self.finish_s - self.arrival_s


@dataclass
class StepLog:
    """What one engine step did, for the block-table view: who ran, who came and went, and every block table after
    the step (``tables``: seq id -> physical blocks; ``swapped``: ids whose blocks sit in the CPU store)."""

    step: int
    clock_s: float
    seconds: float
    decoded: list[int]
    prefilled: dict[int, int]
    admitted: list[int]
    preempted: list[int]
    finished: list[int]
    tables: dict[int, list[int]]
    lengths: dict[int, int]
    swapped: list[int]
    waiting: list[int]
    free_blocks: int


@dataclass
class RunStats:
    """The result of running a trace: per-request stats, per-step log, and the summary figures."""

    requests: list[RequestStats]
    steps: list[StepLog]
    num_blocks: int
    block_size: int
    peak_blocks: int
    preemptions: int
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def generated_tokens(self) -> int:
        return sum(len(r.tokens) for r in self.requests)

    @property
    def makespan_s(self) -> float:
        """From the first arrival to the last finish, on the virtual clock."""
        if not self.requests:
            return 0.0
        return max(r.finish_s for r in self.requests) - min(r.arrival_s for r in self.requests)

    @property
    def busy_fraction(self) -> float:
        """The share of the makespan the engine spent in steps; the rest it waited for requests to arrive. Near 1
        the engine sets the throughput; well below 1 the arrivals do, and a faster engine serves no more."""
        return sum(s.seconds for s in self.steps) / self.makespan_s if self.makespan_s > 0 else float("nan")

    @property
    def mean_batch(self) -> float:
        """Sequences decoded per decode step, on average: how full the steps ran."""
        sizes = [len(s.decoded) for s in self.steps if s.decoded]
        return sum(sizes) / len(sizes) if sizes else 0.0

    @property
    def queued_fraction(self) -> float:
        """The share of steps that ended with an arrived request still waiting to run. Near 0 the engine took every
        request as it arrived (the arrivals set the pace, and a faster engine serves no more); near 1 it had more work
        than its batch limit, blocks or batching policy let it take."""
        return sum(1 for s in self.steps if s.waiting) / len(self.steps) if self.steps else 0.0

    @property
    def throughput(self) -> float:
        """Generated tokens per second of makespan."""
        return self.generated_tokens / self.makespan_s if self.makespan_s > 0 else float("nan")

    def percentile(self, metric: str, q: float) -> float:
        """The q-th percentile (0..100) of ``metric`` ("ttft", "tpot" or "latency") over the requests."""
        if metric not in ("ttft", "tpot", "latency"):
            raise ValueError(f"metric must be 'ttft', 'tpot' or 'latency', got {metric!r}")
        vals = [getattr(r, metric) for r in self.requests]
        vals = [v for v in vals if not np.isnan(v)]
        return float(np.percentile(vals, q)) if vals else float("nan")

    def summary(self) -> dict[str, float]:
        """Throughput and the p50 / p99 of TTFT and TPOT, as a flat dict (seconds and tokens/s)."""
        out = {"throughput_tok_s": self.throughput, "generated_tokens": float(self.generated_tokens),
               "makespan_s": self.makespan_s, "busy_fraction": self.busy_fraction, "mean_batch": self.mean_batch,
               "queued_fraction": self.queued_fraction,
               "peak_blocks": float(self.peak_blocks),
               "preemptions": float(self.preemptions)}
        for m in ("ttft", "tpot", "latency"):
            for q in (50, 99):
                out[f"{m}_p{q}"] = self.percentile(m, q)
        return out

    def outputs(self) -> dict[int, list[int]]:
        """Each request's generated tokens, by request id."""
        return {r.req_id: list(r.tokens) for r in self.requests}


@dataclass(frozen=True)
class CostModel:
    """Seconds one engine step takes, as a linear model of its work: a fixed cost when it decodes, a cost per
    decoded sequence, a cost per prefill forward and per prefilled token (``fit_cost_model`` fits it to a measured
    run). ``kv_bytes_per_token`` and ``link_bytes_per_s`` price moving a KV cache between machines."""

    decode_step_s: float
    decode_seq_s: float
    prefill_call_s: float
    prefill_token_s: float
    kv_bytes_per_token: float = 0.0
    link_bytes_per_s: float = float("inf")

    def step_s(self, log: dict) -> float:
        """The modelled seconds of a step that decoded ``log["decoded"]`` and prefilled ``log["prefilled"]``."""
        n_dec, pre = len(log["decoded"]), log["prefilled"]
        return (self.decode_step_s * (n_dec > 0) + self.decode_seq_s * n_dec + self.prefill_call_s * len(pre)
                + self.prefill_token_s * sum(pre.values()))

    def transfer_s(self, num_tokens: int) -> float:
        """Seconds to move ``num_tokens`` tokens of KV cache over the link."""
        return num_tokens * self.kv_bytes_per_token / self.link_bytes_per_s


def fit_cost_model(stats: RunStats, kv_bytes_per_token: float = 0.0,
                   link_bytes_per_s: float = float("inf")) -> CostModel:
    """Least-squares fit of a ``CostModel`` to the measured steps of a real run (coefficients clipped at 0)."""
    rows, secs = [], []
    for st in stats.steps:
        n = len(st.decoded)
        rows.append([n > 0, n, len(st.prefilled), sum(st.prefilled.values())])
        secs.append(st.seconds)
    if len(rows) < 4:
        raise ValueError(f"fitting a cost model needs a run of at least 4 steps, this one has {len(rows)}")
    coef = np.clip(np.linalg.lstsq(np.asarray(rows, float), np.asarray(secs), rcond=None)[0], 0.0, None)
    return CostModel(*(float(c) for c in coef), kv_bytes_per_token=kv_bytes_per_token,
                     link_bytes_per_s=link_bytes_per_s)
