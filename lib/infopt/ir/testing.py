"""Seeded random graphs for tests, notebooks and benchmarks: well-formed, typed, executable.

``random_graph(seed, n_nodes)`` builds a Graph of elementwise and matmul ops with constants; every value it
makes is read by a later node or returned, so no node is dead code. ``random_feeds`` makes inputs for it.
``graph_fingerprint(graph)`` is what a function handed a graph must leave alone (for "your function changed its
input" checks in hidden tests). ``check_graph_pass(fn, graph, ...)`` is the check every graph-to-graph exercise
shares: a new Graph comes back, the input is left alone, the result verifies and computes the same outputs.
"""
from __future__ import annotations

import hashlib
from typing import Any, Callable

import numpy as np

from .graph import Graph
from .types import TensorType

__all__ = ["BINARY_OPS", "UNARY_OPS", "check_graph_pass", "graph_fingerprint", "random_feeds", "random_graph"]

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


def _relative_error(got: Any, ref: Any) -> float:
    """max|got - ref| / max|ref| in float64 (inf when the shapes differ)."""
    a, b = np.asarray(got, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    if a.shape != b.shape:
        return float("inf")
    denom = float(np.max(np.abs(b))) if b.size else 0.0
    err = float(np.max(np.abs(a - b))) if a.size else 0.0
    return err / denom if denom > 0 else err


def check_graph_pass(fn: Callable[[Graph], Any], graph: Graph, *, name: str, what: str, rtol: float = 1e-6,
                     seed: int = 0, expect: Callable[[Graph], None] | None = None) -> Graph:
    """Run a student's pass ``fn(graph)`` and check what every pass promises; returns the new graph.

    In order: ``fn`` does not raise and leaves ``graph`` unchanged (``call_student`` with ``graph_fingerprint``);
    it returns a Graph other than ``graph``; ``expect(result)`` (the exercise's own checks, run first so that
    their precise message wins); the result verifies (in execution order when ``graph``'s node list is stored
    unsorted: a pass may keep the order it was given); it keeps the input and output names; and on random inputs
    (``random_feeds(graph, seed)``) every output is within ``rtol`` (relative to its largest value) of the
    input graph's. Failures raise the grading error with ``what`` (where) in the message.
    """
    from ..grading import call_student, check_true
    from .interpreter import run_graph
    from .verify import verify

    if not isinstance(graph, Graph):
        raise TypeError(f"check_graph_pass needs a Graph to hand to {name}, got {type(graph).__name__}")
    out = call_student(fn, graph, name=name, fingerprint=graph_fingerprint)
    check_true(isinstance(out, Graph), f"{what}: {name} must return a Graph, got {type(out).__name__}")
    check_true(out is not graph, f"{what}: {name} returned the graph it was given; return a new graph (start "
               "from graph.copy())")
    if expect is not None:
        expect(out)
    try:
        stored_sorted = [id(n) for n in graph.toposort()] == [id(n) for n in graph.nodes]
        if stored_sorted:
            verify(out)
        else:  # the input's node list is not in execution order, so the result need not be either
            ordered = out.copy()
            ordered.nodes = out.toposort()
            verify(ordered)
    except Exception as err:  # noqa: BLE001 (the verifier's GraphError, or a crash on a malformed graph)
        check_true(False, f"{what}: {name} returned an invalid graph: {err}")
    check_true(list(out.inputs) == list(graph.inputs),
               f"{what}: graph inputs changed from {list(graph.inputs)} to {list(out.inputs)}; a pass keeps them")
    check_true(list(out.outputs) == list(graph.outputs),
               f"{what}: graph outputs changed from {list(graph.outputs)} to {list(out.outputs)}; a pass keeps "
               "the graph's output names")
    feeds = random_feeds(graph, seed)
    ref, got = run_graph(graph, feeds), run_graph(out, feeds)
    for o in graph.outputs:
        err = _relative_error(got[o], ref[o])
        check_true(err <= rtol, f"{what}: the outputs changed: graph output %{o} differs from the input graph's "
                   f"by a max relative error of {err:.3g} (allowed {rtol:g}) on random inputs (seed {seed})")
    return out
