"""Does a rewrite preserve meaning? Run both graphs in the interpreter on the same random inputs and compare."""
from __future__ import annotations

from typing import Mapping

import numpy as np

from ..ir.graph import Graph, GraphError
from .rewrite import max_relative_error


def random_feeds(graph: Graph, rng: np.random.Generator | int | None = None) -> dict[str, np.ndarray]:
    """Standard-normal float inputs (small non-negative ints for integer inputs) matching the graph's input types."""
    rng = np.random.default_rng(rng)
    feeds = {}
    for name in graph.inputs:
        t = graph.type_of(name)
        if t.dtype in ("f16", "f32", "f64"):
            feeds[name] = rng.standard_normal(t.shape).astype(t.numpy_dtype)
        elif t.dtype == "bool":
            feeds[name] = rng.integers(0, 2, t.shape).astype(bool)
        else:
            feeds[name] = rng.integers(0, 4, t.shape).astype(t.numpy_dtype)
    return feeds


def output_errors(before: Graph, after: Graph, feeds: Mapping[str, np.ndarray] | None = None,
                  seed: int | None = None) -> dict[str, float]:
    """Max relative error (max|a-b| / max|b|) of every output of ``after`` against ``before`` on one input."""
    from ..ir.interpreter import run_graph

    if list(before.outputs) != list(after.outputs) or list(before.inputs) != list(after.inputs):
        raise GraphError(
            f"the graphs have different interfaces: inputs {before.inputs} -> {after.inputs}, "
            f"outputs {before.outputs} -> {after.outputs}; a pass must keep input and output names"
        )
    feeds = random_feeds(before, seed) if feeds is None else dict(feeds)
    ref = run_graph(before, feeds)
    got = run_graph(after, feeds)
    return {k: max_relative_error(got[k], ref[k]) for k in before.outputs}


def max_output_error(before: Graph, after: Graph, feeds: Mapping[str, np.ndarray] | None = None,
                     seed: int | None = None) -> float:
    """The largest relative output error of ``after`` against ``before`` (0 for identical results)."""
    return max(output_errors(before, after, feeds, seed).values(), default=0.0)
