"""The pass interface and the pass manager: graph in, graph out, with statistics for every step.

A ``Pass`` has a ``name`` and ``run(graph) -> PassResult``. ``run`` never mutates its input: the base
class copies the graph and hands the copy to ``apply``, which rewrites it in place and returns a dict of
statistics. A pass that meets a graph it cannot handle raises ``PassSkipped("why")`` from ``apply``; the
result is then the unchanged input with that reason. ``PassManager`` runs passes in order (optionally to a
fixpoint), verifies the graph after each pass, and records nodes before/after and time per pass.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from ..ir.graph import Graph, GraphError


class PassSkipped(Exception):
    """Raised inside ``Pass.apply`` to leave the graph unchanged and say why."""


class PassError(GraphError):
    """A pass produced an invalid graph: the message names the pass and the verifier's complaint."""


@dataclass
class PassResult:
    """What one pass did: the resulting graph, whether it changed, statistics, and why it did nothing (if so)."""

    graph: Graph
    changed: bool
    stats: dict[str, Any] = field(default_factory=dict)
    reason: str = ""


def graph_signature(graph: Graph) -> tuple:
    """A cheap structural fingerprint: equal signatures mean no pass changed nodes, outputs or constants."""
    nodes = tuple((n.op, tuple(n.inputs), tuple(n.outputs), repr(sorted(n.attrs.items(), key=lambda kv: kv[0])))
                  for n in graph.nodes)
    consts = tuple(sorted((k, id(v)) for k, v in graph.initializers.items()))
    return nodes, tuple(graph.inputs), tuple(graph.outputs), consts


class Pass:
    """A graph-to-graph rewrite. Subclasses set ``name`` and implement ``apply(graph) -> stats`` in place."""

    name: str = "pass"

    def apply(self, graph: Graph) -> dict[str, Any]:
        """Rewrite ``graph`` in place; return statistics (counts). Raise PassSkipped to leave it unchanged."""
        raise NotImplementedError(f"pass {self.name!r} does not implement apply(graph)")

    def run(self, graph: Graph) -> PassResult:
        """Run the pass on a copy of ``graph``; the input is never modified."""
        if not isinstance(graph, Graph):
            raise TypeError(f"pass {self.name!r} expects an infopt.ir.Graph, got {type(graph).__name__}")
        before = graph_signature(graph)
        g = graph.copy()
        try:
            stats = self.apply(g) or {}
        except PassSkipped as e:
            return PassResult(graph, False, {}, reason=str(e) or "skipped")
        try:  # passes may place a rewritten node before a value it now reads: restore a valid order
            g.nodes = g.toposort()
        except GraphError:
            pass  # a cycle: left for the verifier to report with the pass's name
        changed = graph_signature(g) != before
        reason = "" if changed else str(stats.pop("reason", "nothing to rewrite"))
        return PassResult(g if changed else graph, changed, stats, reason)

    def __call__(self, graph: Graph) -> Graph:
        """Shorthand: the rewritten graph."""
        return self.run(graph).graph

    def __repr__(self) -> str:
        return f"<Pass {self.name}>"


class FunctionPass(Pass):
    """Wrap a function ``fn(graph) -> stats`` (rewriting in place) as a Pass named ``name``."""

    def __init__(self, name: str, fn: Callable[[Graph], dict[str, Any] | None]) -> None:
        self.name = name
        self.fn = fn

    def apply(self, graph: Graph) -> dict[str, Any]:
        return self.fn(graph) or {}


@dataclass
class PassRecord:
    """One row of the pass manager's statistics table."""

    pass_name: str
    iteration: int
    nodes_before: int
    nodes_after: int
    time_ms: float
    changed: bool
    stats: dict[str, Any]
    reason: str = ""

    def row(self) -> dict[str, Any]:
        """The record as a flat dict (one table row)."""
        return {
            "pass": self.pass_name, "iter": self.iteration, "nodes_before": self.nodes_before,
            "nodes_after": self.nodes_after, "time_ms": round(self.time_ms, 3), "changed": self.changed,
            "stats": ", ".join(f"{k}={v}" for k, v in self.stats.items()) or self.reason,
        }


@dataclass
class PipelineResult:
    """The graph after a pass pipeline, one record per pass run, and (optionally) a snapshot after each."""

    graph: Graph
    records: list[PassRecord]
    snapshots: list[Graph] = field(default_factory=list)

    def table(self) -> list[dict[str, Any]]:
        """The statistics as a list of rows (dicts)."""
        return [r.row() for r in self.records]

    def format_table(self) -> str:
        """The statistics as a fixed-width text table."""
        rows = self.table()
        if not rows:
            return "(no passes run)"
        cols = list(rows[0])
        widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in cols}
        lines = ["  ".join(c.ljust(widths[c]) for c in cols), "  ".join("-" * widths[c] for c in cols)]
        lines += ["  ".join(str(r[c]).ljust(widths[c]) for c in cols) for r in rows]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = self.table()
        head = "".join(f"<th>{c}</th>" for c in (rows[0] if rows else []))
        body = "".join("<tr>" + "".join(f"<td>{v}</td>" for v in r.values()) + "</tr>" for r in rows)
        return f"<table><tr>{head}</tr>{body}</table>"


def verify_graph(graph: Graph) -> None:
    """Run the IR verifier (infopt.ir.verify); raises GraphError when the graph is ill-formed."""
    from ..ir.verify import verify

    verify(graph)


class PassManager:
    """Run passes in order, or repeat the list until nothing changes (``fixpoint=True``), verifying after each.

    ``verify=True`` (default) runs the IR verifier after every pass that changed the graph; a pass that
    breaks the graph raises PassError naming the pass (``on_invalid="raise"``) or is undone and recorded
    with the verifier's message (``on_invalid="revert"``).
    """

    def __init__(
        self,
        passes: Sequence[Pass],
        fixpoint: bool = False,
        max_iterations: int = 10,
        verify: bool = True,
        on_invalid: str = "raise",
    ) -> None:
        for p in passes:
            if not isinstance(p, Pass):
                raise TypeError(f"PassManager takes Pass objects; got {p!r} (wrap a function with FunctionPass)")
        if on_invalid not in ("raise", "revert"):
            raise ValueError(f"on_invalid must be 'raise' or 'revert', got {on_invalid!r}")
        if max_iterations < 1:
            raise ValueError(f"max_iterations must be >= 1, got {max_iterations}")
        self.passes = list(passes)
        self.fixpoint = fixpoint
        self.max_iterations = max_iterations
        self.verify = verify
        self.on_invalid = on_invalid

    def run(self, graph: Graph, snapshots: bool = False) -> PipelineResult:
        """Run the pipeline on ``graph`` (unchanged); returns the result graph and the statistics."""
        records: list[PassRecord] = []
        shots: list[Graph] = [graph] if snapshots else []
        iterations = self.max_iterations if self.fixpoint else 1
        for it in range(iterations):
            any_change = False
            for p in self.passes:
                n0 = len(graph)
                t0 = time.perf_counter()
                res = p.run(graph)
                dt = (time.perf_counter() - t0) * 1e3
                reason = res.reason
                if res.changed and self.verify:
                    try:
                        verify_graph(res.graph)
                    except GraphError as e:
                        if self.on_invalid == "raise":
                            raise PassError(f"pass {p.name!r} produced an invalid graph: {e}") from e
                        res = PassResult(graph, False, {}, reason=f"reverted: produced an invalid graph ({e})")
                        reason = res.reason
                records.append(PassRecord(p.name, it, n0, len(res.graph), dt, res.changed, dict(res.stats), reason))
                if res.changed:
                    any_change = True
                    graph = res.graph
                if snapshots:
                    shots.append(graph)
            if not any_change:
                break
        return PipelineResult(graph, records, shots)

    def __call__(self, graph: Graph) -> Graph:
        """Shorthand: the graph after the pipeline."""
        return self.run(graph).graph


def run_passes(graph: Graph, passes: Iterable[Pass], **kwargs: Any) -> PipelineResult:
    """Convenience: ``PassManager(list(passes), **kwargs).run(graph)``."""
    return PassManager(list(passes), **kwargs).run(graph)
