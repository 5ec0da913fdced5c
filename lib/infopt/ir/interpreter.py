"""The reference interpreter: runs a Graph on numpy arrays with the registry's kernels, node by node.

Values are freed after their last use, so peak memory follows the live set (what memory planning
later optimizes). With ``trace=True`` it also records how long each node took.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Mapping, overload, Literal

import numpy as np

from .errors import GraphError
from .graph import Graph
from .node import Node
from .ops import get_op
from .types import TensorType


@dataclass(frozen=True)
class NodeTiming:
    """One node's run: which node, its op, its output types, the seconds its kernel took, and the bytes of
    non-constant values still held once it is done (the live set after freeing)."""

    node: str
    op: str
    outputs: tuple[TensorType, ...]
    seconds: float
    live_bytes: int = 0


def check_feeds(graph: Graph, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The feeds as arrays, checked against the graph inputs: no missing or extra names, declared shape and dtype."""
    runtime_inputs = [i for i in graph.inputs if i not in graph.initializers]
    missing = [i for i in runtime_inputs if i not in feeds]
    extra = [k for k in feeds if k not in graph.inputs]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing {', '.join(missing)}")
        if extra:
            parts.append(f"unexpected {', '.join(map(str, extra))}")
        raise GraphError(f"graph {graph.name!r}: feeds do not match its inputs ({'; '.join(parts)}); "
                         f"it takes {', '.join(f'{i}: {graph.type_of(i)}' for i in runtime_inputs) or 'nothing'}")
    out: dict[str, np.ndarray] = {}
    for name, value in feeds.items():
        arr = np.asarray(value)
        want = graph.type_of(name)
        if arr.shape != want.shape or arr.dtype != want.numpy_dtype:
            raise GraphError(f"graph {graph.name!r}: input {name} must be {want.dtype}{list(want.shape)} "
                             f"(numpy {want.numpy_dtype}, shape {want.shape}) but the feed is {arr.dtype} "
                             f"with shape {arr.shape}")
        out[name] = arr
    return out


def _last_uses(order: list[Node], keep: set[str]) -> list[list[str]]:
    """For each step, the values read for the last time there (never the graph outputs or ``keep``)."""
    last: dict[str, int] = {}
    for k, node in enumerate(order):
        for i in node.inputs:
            if i:
                last[i] = k
        for o in node.outputs:
            last.setdefault(o, k)  # an output nobody reads dies where it is made
    frees: list[list[str]] = [[] for _ in order]
    for name, k in last.items():
        if name not in keep:
            frees[k].append(name)
    return frees


@overload
def run_graph(graph: Graph, feeds: Mapping[str, np.ndarray], trace: Literal[False] = False,
              check_types: bool = True) -> dict[str, np.ndarray]: ...
@overload
def run_graph(graph: Graph, feeds: Mapping[str, np.ndarray], trace: Literal[True],
              check_types: bool = True) -> tuple[dict[str, np.ndarray], list[NodeTiming]]: ...


def run_graph(graph, feeds, trace=False, check_types=True):
    """Run ``graph`` on ``feeds`` (name -> array) in topological order; returns {output name: array}.

    With ``trace=True`` returns ``(outputs, timings)``, one NodeTiming per node in execution order.
    With ``check_types`` each kernel's outputs are checked against the stored types (naming the node).
    """
    env: dict[str, np.ndarray] = dict(graph.initializers)
    env.update(check_feeds(graph, feeds))
    order = graph.toposort()
    frees = _last_uses(order, set(graph.outputs) | set(graph.initializers))
    timings: list[NodeTiming] = []
    for node, dead in zip(order, frees):
        try:
            args = [env[i] if i else None for i in node.inputs]
        except KeyError as e:
            raise GraphError(f"node {node.label} reads %{e.args[0]}, which nothing defines before it") from None
        opdef = get_op(node.op, node)
        t0 = time.perf_counter()
        try:
            with np.errstate(all="ignore"):  # IEEE results (inf, nan) as onnxruntime gives, without warnings
                outs = opdef.compute(args, node.attrs)
        except GraphError as e:
            raise GraphError(f"node {node.label} ({node.op}): {e}") from None
        except (ValueError, IndexError, TypeError, FloatingPointError) as e:
            raise GraphError(
                f"node {node.label} ({node.op}) failed on inputs "
                f"{[None if a is None else f'{a.dtype}{list(a.shape)}' for a in args]}: {e}") from e
        dt = time.perf_counter() - t0
        if len(outs) < len(node.outputs):
            raise GraphError(f"node {node.label}: {node.op}'s kernel returned {len(outs)} outputs, the node "
                             f"lists {len(node.outputs)}")
        for name, val in zip(node.outputs, outs):
            val = np.asarray(val)
            if check_types and name in graph.types:
                t = graph.types[name]
                if val.shape != t.shape or val.dtype != t.numpy_dtype:
                    raise GraphError(f"node {node.label} ({node.op}): its kernel made %{name} as {val.dtype} "
                                     f"{val.shape} but its type says {t}")
            env[name] = val
        for name in dead:
            env.pop(name, None)
        if trace:
            live = sum(v.nbytes for k, v in env.items() if k not in graph.initializers)
            timings.append(NodeTiming(node.label, node.op, tuple(graph.types.get(o) for o in node.outputs), dt, live))
    missing = [o for o in graph.outputs if o not in env]
    if missing:
        raise GraphError(f"graph {graph.name!r}: outputs {', '.join('%' + m for m in missing)} are never defined")
    result = {o: env[o] for o in graph.outputs}
    return (result, timings) if trace else result
