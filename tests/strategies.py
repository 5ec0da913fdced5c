"""Hypothesis strategies over the library's seeded random graphs (``infopt.ir.testing``)."""
from __future__ import annotations

from hypothesis import strategies as st

from infopt.ir import Graph
from infopt.ir.testing import random_feeds, random_graph

__all__ = ["graphs", "random_feeds", "random_graph"]


def graphs(max_nodes: int = 12) -> st.SearchStrategy[Graph]:
    """Hypothesis strategy: random_graph over seeds and sizes (shrinks toward small graphs)."""
    return st.builds(random_graph, st.integers(0, 2**31 - 1), st.integers(1, max_nodes),
                     st.integers(1, 4), st.integers(1, 5))
