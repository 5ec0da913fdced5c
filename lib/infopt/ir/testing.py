"""Seeded random graphs for tests, notebooks and benchmarks: well-formed, typed, executable.

``random_graph(seed, n_nodes)`` builds a Graph of elementwise and matmul ops with constants; every value it
makes is read by a later node or returned, so no node is dead code. ``random_feeds`` makes inputs for it.
``graph_fingerprint(graph)`` is what a function handed a graph must leave alone (for "your function changed its
input" checks in hidden tests).
"""
from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from .graph import Graph
from .types import TensorType

__all__ = ["BINARY_OPS", "UNARY_OPS", "graph_fingerprint", "random_feeds", "random_graph"]

UNARY_OPS = ("Relu", "Neg", "Tanh", "Sigmoid", "Identity", "Gelu")
BINARY_OPS = ("Add", "Sub", "Mul", "Max", "Min")


def random_graph(seed: int, n_nodes: int = 8, rows: int = 3, cols: int = 4) -> Graph:
    """A random DAG of ``n_nodes`` nodes (unary, broadcasting binary, Div by a safe constant, MatMul by a
    constant) over one or two f32 inputs of shape (rows, cols); values stay bounded and finite."""
    rng = np.random.default_rng(seed)
    g = Graph(f"random_{seed}")
    pool = [g.add_input("x", TensorType((rows, cols)))]
    if rng.random() < 0.5:
        pool.append(g.add_input("y", TensorType((rows, cols))))
    read: set[str] = set()

    def const(shape: tuple[int, ...], lo: float = -1.0, hi: float = 1.0) -> str:
        return g.add_initializer(g.fresh_name("c"), rng.uniform(lo, hi, shape).astype(np.float32))

    for k in range(n_nodes):
        a = pool[int(rng.integers(len(pool)))] if rng.random() < 0.5 else pool[-1]
        shape = g.types[a].shape
        kind = rng.random()
        if kind < 0.3:
            ins, op = [a], str(rng.choice(UNARY_OPS))
        elif kind < 0.7:
            op = str(rng.choice(BINARY_OPS))
            same = [v for v in pool if g.types[v].shape == shape and v != a]
            if same and rng.random() < 0.6:
                b = same[int(rng.integers(len(same)))]
            else:
                b = const([(1, shape[1]), (shape[0], 1), (), shape][int(rng.integers(4))])
            ins = [a, b] if rng.random() < 0.5 else [b, a]
        elif kind < 0.8:
            op, ins = "Div", [a, const((shape[1],), 1.0, 2.0)]
        else:
            n_out = int(rng.choice([2, 4, 5]))
            w = (rng.standard_normal((shape[1], n_out)) / np.sqrt(shape[1])).astype(np.float32)
            op, ins = "MatMul", [a, g.add_initializer(g.fresh_name("w"), w)]
        node = g.add_node(op, ins, name=f"n{k}_{op.lower()}")
        read.update(ins)
        pool.append(node.outputs[0])
    sinks = [v for v in pool[1:] if v not in read and v not in g.inputs]
    g.outputs = sinks or [pool[-1]]
    return g


def random_feeds(graph: Graph, rng: np.random.Generator | int | None = None) -> dict[str, np.ndarray]:
    """Inputs matching the graph's input types: standard normal floats, random bools, small non-negative ints."""
    rng = np.random.default_rng(rng)
    feeds = {}
    for name in graph.inputs:
        if name in graph.initializers:
            continue
        t = graph.type_of(name)
        if t.dtype in ("f16", "f32", "f64"):
            feeds[name] = rng.standard_normal(t.shape).astype(t.numpy_dtype)
        elif t.dtype == "bool":
            feeds[name] = rng.integers(0, 2, t.shape).astype(bool)
        else:
            feeds[name] = rng.integers(0, 4, t.shape).astype(t.numpy_dtype)
    return feeds


def _array_digest(value: Any) -> tuple:
    arr = np.asarray(value)
    return (arr.dtype.str, arr.shape, hashlib.blake2b(np.ascontiguousarray(arr).tobytes(), digest_size=16).digest())


def graph_fingerprint(graph: Graph) -> tuple:
    """A value that changes when anything a caller owns in ``graph`` changes: its name, inputs, outputs, types,
    initializers (names and contents), and each node (by identity) with its op, inputs, outputs, attributes, name.

    Meant as ``call_student(fn, graph, fingerprint=graph_fingerprint)``: unlike a pickle, it sees a node list
    rebuilt from equal copies, and it ignores the graph's private name counter (``fresh_name`` may advance it).
    """
    if not isinstance(graph, Graph):
        raise TypeError(f"graph_fingerprint needs a Graph, got {type(graph).__name__}")
    return (
        graph.name,
        tuple(graph.inputs),
        tuple(graph.outputs),
        tuple(sorted((k, repr(v)) for k, v in graph.types.items())),
        tuple((k, id(v), _array_digest(v)) for k, v in graph.initializers.items()),
        tuple((id(n), n.op, tuple(n.inputs), tuple(n.outputs), repr(n.attrs), n.name) for n in graph.nodes),
    )
