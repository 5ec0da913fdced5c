"""Does a rewrite preserve meaning? Run both graphs in the interpreter on the same random inputs and compare."""
from __future__ import annotations

from typing import Mapping

import numpy as np

from ..ir.graph import Graph, GraphError
from ..ir.testing import random_feeds
from .rewrite import max_relative_error

__all__ = ["random_feeds", "output_errors", "max_output_error"]


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
