# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Unit 01 — Graphs & IR
#
# Every inference optimizer, from onnxruntime to TVM to tinygrad, starts the same way: it turns a model
# into a **graph** — a directed acyclic graph (DAG) whose nodes are operations (`Conv`, `Relu`, `Add`...)
# and whose edges are tensors flowing from the op that produces them to the ops that read them.
# Optimizations are rewrites of that graph; code generation walks it in some order.
#
# In this unit you will
# 1. capture the same PyTorch model three ways (torch.fx, torch.export, ONNX) and see what each keeps and loses;
# 2. read a graph's metadata (shapes, dtypes, layouts) and the SSA rules that make it easy to analyse;
# 3. use ONNX as an interchange format (opsets, shape inference, the version converter);
# 4. look at ResNet-18 as a graph (Netron and a plotly view) and clean the redundant ops out of it;
# 5. compare the graph view with the **linearized** view (one instruction after the other), ours and tinygrad's.
#
# **Graded exercises** (autograded; each has visible tests you can run and hidden tests on fresh random inputs):
#
# | # | function | points |
# |---|---|---|
# | 1 | `topo_order(graph)` — an execution order, or `ValueError` on a cycle | 2 |
# | 2 | `ssa_problems(graph)` — an SSA verifier | 3 |
# | 3 | `conv_output_shape(...)` — Conv shape inference | 2 |
# | 4 | `remove_redundant(graph)` — drop Identity / Dropout / cancelling Transposes | 3 |
# | 5 | `free_after(graph)` — last-use (liveness) over the linear form | 2 |
#
# The exercises are independent: if you are stuck on one, the next still works (later sections use the
# library's versions, never your code; only the ResNet-18 memory plot after Exercise 5 calls your
# `free_after`, and it waits for you to implement it). Test failures tell you what was expected and what
# your code returned.

# %%
import time
import warnings

import numpy as np
import plotly.graph_objects as go

import infopt
from infopt.grading import check_array, check_equal, check_raises, check_true
from infopt.ir import Graph, GraphError, Node, TensorType

_T0 = time.perf_counter()
print("infopt", infopt.__version__)

# %% [markdown]
# ## 1. A model is a DAG
#
# In `infopt.ir` (the library this course builds) a graph is a list of `Node`s. Each node has an `op`,
# attributes, and **names** of the values it reads (`inputs`) and defines (`outputs`). A value is named once,
# by exactly one definition: a graph input, a constant (an *initializer*), or one node's output.
# Every value carries a static type: shape, dtype and an optional layout tag.

# %%
g = Graph("tiny")
x = g.add_input("x", TensorType((1, 3, 8, 8), "f32", "NCHW"))
w = g.add_initializer("w", np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32))
conv = g.add_node("Conv", [x, w], {"pads": [1, 1, 1, 1]})
relu = g.add_node("Relu", conv.outputs)
g.outputs = relu.outputs
print(repr(g))
for node in g.nodes:
    print(f"{node.op:6s} reads {node.inputs} defines {node.outputs} -> {[str(g.type_of(v)) for v in node.outputs]}")
print("producer of", relu.outputs[0], "is", g.producers()[relu.outputs[0]].label)
print("readers of", conv.outputs[0], "are", [n.label for n in g.consumers()[conv.outputs[0]]])

# %% [markdown]
# The same graph in the library's text form — one SSA line per node, MLIR-like (`%name = Op(...) : type`):

# %%
from infopt.ir.text import to_text

print(to_text(g))

# %% [markdown]
# ## 2. Three ways to get a graph out of PyTorch
#
# PyTorch runs *eagerly*: Python executes `forward` line by line, there is no graph until you ask for one.
# There are three common ways to ask:
#
# * **`torch.fx.symbolic_trace`** runs `forward` on *proxy* objects and records every call. It keeps the
#   module structure (`call_module conv`), knows no shapes, and fails on any Python control flow that
#   depends on the input (a proxy has no value to branch on).
# * **`torch.export.export`** traces with *fake tensors* that carry shapes, lowers to ATen ops, and lifts
#   parameters and buffers into explicit graph inputs (the *graph signature*). Shape-dependent `if`s are
#   resolved for the example shape (specialized), data-dependent ones need `torch.cond`.
# * **`torch.onnx.export`** produces a portable ONNX file: ONNX ops (a fixed, versioned vocabulary),
#   weights stored as initializers, control flow unrolled by tracing (a `TracerWarning` tells you when).
#
# Here is a small model with a shape-dependent branch:

# %%
import torch
import torch.nn as nn


class SmallNet(nn.Module):
    """conv-bn-relu, an optional max-pool chosen by the input size, global average, dropout, linear."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.drop = nn.Dropout(0.25)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        if x.shape[-1] > 16:  # control flow on a shape
            y = nn.functional.max_pool2d(y, 2)
        y = y.mean(dim=(2, 3))
        return self.fc(self.drop(y))


torch.manual_seed(0)
net = SmallNet().eval()
example = torch.randn(1, 3, 32, 32)

# torch.fx: the branch stops it.
import torch.fx

try:
    torch.fx.symbolic_trace(net)
except Exception as err:  # TraceError
    print(f"torch.fx.symbolic_trace failed: {type(err).__name__}: {err}")

# concrete_args cannot help either: the branch reads x.shape, and x must stay symbolic.
# Tracing a version without the branch shows what fx keeps: module calls, no shapes.
class SmallNetNoBranch(SmallNet):
    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        y = nn.functional.max_pool2d(y, 2)
        return self.fc(self.drop(y.mean(dim=(2, 3))))


fx_graph = torch.fx.symbolic_trace(SmallNetNoBranch().eval()).graph
print("\n--- torch.fx graph (no branch) ---")
print(fx_graph)
print("nodes with a known shape:", sum("val" in n.meta or "tensor_meta" in n.meta for n in fx_graph.nodes))

# %%
exported = torch.export.export(net, (example,))
ep_graph = exported.graph_module.graph
print("--- torch.export graph ---")
for node in ep_graph.nodes:
    val = node.meta.get("val")
    shape = tuple(val.shape) if hasattr(val, "shape") else ""
    print(f"{node.op:14s} {str(node.target):36s} {shape}")
print("\nparameters became inputs:", [s.arg.name for s in exported.graph_signature.input_specs][:4], "...")
print("the branch was specialized: max_pool2d present ->", any("max_pool" in str(n.target) for n in ep_graph.nodes))

# %%
import onnx

from infopt.models import export_onnx

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the TorchScript exporter warns about the traced `if`
    small_onnx = export_onnx(net, example, do_constant_folding=False)
print("--- ONNX graph ---")
for node in small_onnx.graph.node:
    print(f"{node.op_type:20s} {list(node.input)} -> {list(node.output)}")
print("initializers:", [i.name for i in small_onnx.graph.initializer])
print("opset:", [(o.domain or "ai.onnx", o.version) for o in small_onnx.opset_import])

# %% [markdown]
# What each representation kept, on the same model (node counts exclude inputs/outputs):

# %%
counts = {
    "torch.fx (no branch)": sum(n.op in ("call_module", "call_function", "call_method") for n in fx_graph.nodes),
    "torch.export (ATen)": sum(n.op == "call_function" for n in ep_graph.nodes),
    "ONNX": len(small_onnx.graph.node),
}
rows = [
    ("ops recorded", *[str(v) for v in counts.values()]),
    ("parameters", "module attributes (get_attr / call_module)", "explicit graph inputs (signature)", "initializers"),
    ("shapes", "none (run ShapeProp to add them)", "fake tensors in node.meta['val']", "inputs/outputs; value_info after shape inference"),
    ("shape `if`", "TraceError", "specialized to the example", "specialized (TracerWarning)"),
    ("granularity", "module calls (Conv2d, BatchNorm2d)", "ATen ops", "ONNX ops (BN kept, Dropout dropped in eval)"),
]
fig = go.Figure(go.Table(header=dict(values=["", *counts.keys()]), cells=dict(values=list(zip(*rows)))))
fig.update_layout(title="Same model, three graphs", height=330, margin=dict(l=10, r=10, t=40, b=10))
fig

# %% [markdown]
# ## 3. Graph metadata: shapes, dtypes, layouts
#
# An optimizer needs static types: the shape decides tile sizes and memory, the dtype decides
# instructions, and the **layout** decides what "adjacent in memory" means. PyTorch and ONNX use
# **NCHW** (channels before rows); many CPU/GPU kernels prefer **NHWC** (all channels of a pixel together).
# Same logical tensor, different strides:

# %%
a = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)  # N, C, H, W
nhwc = np.ascontiguousarray(a.transpose(0, 2, 3, 1))
print("NCHW shape", a.shape, "strides (elements)", tuple(s // 4 for s in a.strides))
print("NHWC shape", nhwc.shape, "strides (elements)", tuple(s // 4 for s in nhwc.strides))
print("pixel (0,:,1,2) in NCHW memory offsets:", [int(np.ravel_multi_index((0, c, 1, 2), a.shape)) for c in range(3)])
print("pixel (0,1,2,:) in NHWC memory offsets:", [int(np.ravel_multi_index((0, 1, 2, c), nhwc.shape)) for c in range(3)])

# In the IR the layout is a tag on the type; a Transpose changes shape (and the tag is ours to set).
t_nchw = TensorType((1, 64, 56, 56), "f32", "NCHW")
t_nhwc = TensorType((1, 56, 56, 64), "f32", "NHWC")
print(t_nchw, "|", t_nhwc, "| bytes:", t_nchw.nbytes)

# %% [markdown]
# ## 4. Execution order — Exercise 1 (2 points)
#
# A graph is only runnable in an order where every node comes after the producers of its inputs:
# a **topological order**. Kahn's algorithm: count for each node how many distinct producer nodes it
# still waits for; start with the nodes waiting for none; each time you emit a node, its readers wait for
# one fewer. If nodes remain that never become ready, they lie on a **cycle** — not a DAG, not runnable.
#
# Below is a helper that builds random graphs; the tests use it, and you can use it to try your code.

# %%
def random_dag(rng: np.random.Generator, n_nodes: int = 12, n_inputs: int = 2, p_multi: float = 0.25) -> Graph:
    """A random DAG (structure only, no types): nodes read 1-3 earlier values, some define two values."""
    g = Graph("random")
    avail = []
    for i in range(n_inputs):
        g.inputs.append(f"in{i}")
        avail.append(f"in{i}")
    g.add_initializer("c0", np.zeros(1, np.float32))
    avail.append("c0")
    for k in range(n_nodes):
        n_in = int(rng.integers(1, 4))
        ins = [avail[int(j)] for j in rng.integers(0, len(avail), size=n_in)]  # repeats allowed: Add(x, x)
        if rng.random() < 0.1:
            ins.append("")  # an absent optional input
        outs = [f"v{k}"] if rng.random() >= p_multi else [f"v{k}a", f"v{k}b"]
        g.nodes.append(Node("Split" if len(outs) == 2 else str(rng.choice(["Add", "Mul", "Relu", "Conv"])),
                            ins, outs, name=f"n{k}"))
        avail += outs
    g.outputs = [g.nodes[-1].outputs[0]] + ([g.nodes[len(g.nodes) // 2].outputs[-1]] if n_nodes > 2 else [])
    return g


def shuffled(g: Graph, rng: np.random.Generator) -> Graph:
    """The same graph with its node list in a random order."""
    h = g.copy()
    h.nodes = [h.nodes[int(i)] for i in rng.permutation(len(h.nodes))]
    return h


for node in random_dag(np.random.default_rng(1), n_nodes=4).nodes:
    print(node)

# %% [markdown]
# **Implement `topo_order(graph)`**:
# * return a `list` holding every node of `graph.nodes` exactly once (the same `Node` objects), ordered so
#   that each node comes after the nodes that define its inputs;
# * inputs that are graph inputs, initializers or the empty string `""` (an absent optional input) have no
#   producer; a node may read the same value twice;
# * if the nodes contain a cycle (a node that, directly or through others, reads its own output), raise
#   `ValueError` with a message naming at least one node on it;
# * do not modify `graph`, and do not call the library's `Graph.toposort()` (the test disables it).
#
# The tests shuffle `graph.nodes` of random DAGs and check that every node appears once and after its
# producers; they add a back edge to random DAGs and expect `ValueError`.

# %% solution=true grade_id="topo"
def topo_order(graph: Graph) -> list[Node]:
    """The nodes of `graph` in an order where producers come before readers; ValueError on a cycle."""
    ### BEGIN SOLUTION
    from collections import deque

    producer = {out: node for node in graph.nodes for out in node.outputs if out}
    waits: dict[int, set[int]] = {id(n): set() for n in graph.nodes}
    readers: dict[int, list[Node]] = {id(n): [] for n in graph.nodes}
    for node in graph.nodes:
        for name in node.inputs:
            dep = producer.get(name) if name else None
            if dep is not None and id(dep) not in waits[id(node)]:
                waits[id(node)].add(id(dep))
                readers[id(dep)].append(node)
    ready = deque(n for n in graph.nodes if not waits[id(n)])
    order: list[Node] = []
    while ready:
        node = ready.popleft()
        order.append(node)
        for user in readers[id(node)]:
            waits[id(user)].discard(id(node))
            if not waits[id(user)]:
                ready.append(user)
    if len(order) != len(graph.nodes):
        stuck = [n.label for n in graph.nodes if waits[id(n)]]
        raise ValueError(f"the graph has a cycle; these nodes never become ready: {stuck[:6]}")
    return order
    ### END SOLUTION


# %% grade_id="topo_test" points=2
def _check_topo(g: Graph, what: str) -> None:
    """Every node exactly once, each after the producers of its inputs; the graph left as it was."""
    before = [(id(n), list(n.inputs)) for n in g.nodes]
    order = topo_order(g)
    check_true(type(order) is list, f"{what}: topo_order must return a list, got {type(order).__name__}")
    check_true(len(order) == len(g.nodes) and {id(n) for n in order} == {id(n) for n in g.nodes},
               f"{what}: expected every node of graph.nodes exactly once ({len(g.nodes)} nodes), "
               f"got {len(order)} entries covering {len({id(n) for n in order} & {id(n) for n in g.nodes})} of them")
    pos = {id(n): i for i, n in enumerate(order)}
    producer = {o: n for n in g.nodes for o in n.outputs}
    for n in order:
        for name in n.inputs:
            if name in producer:
                check_true(pos[id(producer[name])] < pos[id(n)],
                           f"{what}: node {n.label} reads %{name} but comes before its producer "
                           f"{producer[name].label} in your order")
    check_true([(id(n), list(n.inputs)) for n in g.nodes] == before, f"{what}: topo_order modified graph.nodes")


_saved_toposort = Graph.toposort


def _no_library_sort(self):
    raise RuntimeError("write your own ordering: Graph.toposort() is switched off for this exercise")


Graph.toposort = _no_library_sort
try:
    # a diamond given in reverse order
    d = Graph("diamond", inputs=["x"], outputs=["y"])
    d.nodes = [Node("Add", ["l", "r"], ["y"], name="join"), Node("Neg", ["a"], ["r"], name="right"),
               Node("Relu", ["a"], ["l"], name="left"), Node("Exp", ["x"], ["a"], name="top")]
    _check_topo(d, "reversed diamond")
    check_equal([n.name for n in topo_order(d)][0], "top", name="first node of the reversed diamond")
    _check_topo(shuffled(random_dag(np.random.default_rng(7)), np.random.default_rng(8)), "random DAG (seed 7)")
    # a two-node cycle: a reads b, b reads a
    cyc = Graph("cycle", inputs=["x"], outputs=["b"])
    cyc.nodes = [Node("Add", ["x", "b"], ["a"], name="A"), Node("Relu", ["a"], ["b"], name="B")]
    check_raises(ValueError, topo_order, cyc, name="topo_order(graph with cycle A -> B -> A)")
    ### BEGIN HIDDEN TESTS
    _rng = np.random.default_rng()
    for _trial in range(25):
        _g = random_dag(_rng, n_nodes=int(_rng.integers(1, 30)), n_inputs=int(_rng.integers(1, 4)))
        _check_topo(shuffled(_g, _rng), f"hidden random DAG #{_trial} ({len(_g.nodes)} nodes)")
    for _trial in range(15):
        _g = random_dag(_rng, n_nodes=int(_rng.integers(2, 25)))
        _cons = _g.consumers()
        _j = int(_rng.integers(len(_g.nodes)))
        _desc, _todo = [], list(_g.nodes[_j].outputs)  # nodes reachable from node j
        while _todo:
            for _r in _cons.get(_todo.pop(), []):
                if _r not in _desc:
                    _desc.append(_r)
                    _todo += _r.outputs
        _back = _desc[int(_rng.integers(len(_desc)))] if _desc and _rng.random() < 0.8 else _g.nodes[_j]
        _g.nodes[_j].inputs.append(_back.outputs[0])  # j now reads a value computed from j: a cycle
        check_raises(ValueError, topo_order, shuffled(_g, _rng),
                     name=f"topo_order(hidden graph #{_trial} with a cycle through node {_g.nodes[_j].label})")
    ### END HIDDEN TESTS
finally:
    Graph.toposort = _saved_toposort
print("topo_order: visible tests passed")

# %% [markdown]
# ## 5. SSA: one name, one definition — Exercise 2 (3 points)
#
# The IR is in **static single assignment** (SSA) form: every value has exactly one definition and is
# never overwritten. That is what makes graph analyses cheap and exact:
#
# * **def-use chains are maps**: "who produces `%v`?" is one dictionary lookup (`graph.producers()`),
#   "who reads it?" another (`graph.consumers()`). No reaching-definitions analysis is needed.
# * **alias and memory analysis are clean**: a name is an immutable tensor, so two different names can
#   share a buffer only if the memory planner decides so — and it can, exactly when their lifetimes
#   (definition to last use) do not overlap (section 8). With in-place updates (`x += 1` in PyTorch),
#   one name means different contents at different times, and every reordering must prove no one
#   reads the old contents.
# * **rewrites are local**: replacing a value means renaming its uses (`graph.replace_uses(old, new)`).
#
# PyTorch itself converts to SSA before optimizing. Below, `y` is mutated twice. `torch.export` first records
# the in-place ops as they are (`add_`, `mul_`: one buffer, several contents over time); lowering to core ATen
# (`run_decompositions`) **functionalizes** them — every mutation becomes a new value (`add`, `mul_1`), so
# "which `y` does `relu` read?" has one answer written in the graph:

# %%
class InPlace(nn.Module):
    def forward(self, x):
        y = x * 2
        y.add_(1)   # mutates y
        z = y.relu()
        y.mul_(3)   # mutates y again, after relu read it
        return z + y


inplace_ep = torch.export.export(InPlace(), (torch.randn(4),))
print("as exported:", inplace_ep.graph_module.code.strip(), sep="\n")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    functional = inplace_ep.run_decompositions({})
print("\nfunctionalized (SSA):", functional.graph_module.code.strip(), sep="\n")

# %% [markdown]
# A graph that breaks SSA is a bug in whatever produced it — an importer, or a rewrite pass. A verifier
# catches it early and names the value.

# %% [markdown]
# Here is a graph with one problem of each kind. The library's verifier (`infopt.ir.verify`) lists them —
# plus type problems, since this hand-made graph has no types at all. `check(graph)` returns every problem
# as a message naming the node and the value; `verify(graph)` raises a `GraphError` on the first one
# (passes call it after each rewrite).

# %%
from infopt.ir.verify import check, verify

bad = Graph("bad", inputs=["x"], outputs=["y", "ghost"])
bad.nodes = [
    Node("Relu", ["t"], ["y"], name="uses_t_early"),   # t is defined by the next node
    Node("Exp", ["x"], ["t"], name="defines_t"),
    Node("Neg", ["x"], ["x"], name="redefines_x"),     # x is also a graph input
    Node("Add", ["t", "nowhere"], ["z"], name="reads_nowhere"),
]
for problem in check(bad):
    print(" -", problem)
verify(g)  # the tiny graph of section 1 is fine: no exception
print("verify(tiny graph from section 1): OK")

# %% [markdown]
# **Implement `ssa_problems(graph)`**, returning a `set` of `(kind, value_name)` tuples, empty when the
# graph is fine. Read `graph.nodes` in their stored order (the program order). Empty names `""` are ignored.
# A *definition* is a name in `graph.inputs`, a key of `graph.initializers`, or a name in some node's
# `outputs`. The four kinds:
#
# | kind | when |
# |---|---|
# | `"redefined"` | the name has more than one definition (count all of them: inputs, initializers, outputs of every node, a name listed twice counts twice) |
# | `"undefined"` | a node reads the name and it has no definition anywhere |
# | `"use_before_def"` | a node reads the name, it has a definition, but none comes before this node (graph inputs and initializers come before every node; a node's own outputs do not come before it) |
# | `"undefined_output"` | a name in `graph.outputs` has no definition anywhere |
#
# Each problem is reported once: the result is a set. Return, don't raise. The hidden tests break
# random graphs in random ways and compare your set with the expected one.

# %% solution=true grade_id="ssa"
def ssa_problems(graph: Graph) -> set[tuple[str, str]]:
    """The SSA violations of `graph` as a set of (kind, value) pairs; empty when the graph is well-formed."""
    ### BEGIN SOLUTION
    ndefs: dict[str, int] = {}
    for name in [*graph.inputs, *graph.initializers, *(o for n in graph.nodes for o in n.outputs)]:
        if name:
            ndefs[name] = ndefs.get(name, 0) + 1
    problems = {("redefined", v) for v, k in ndefs.items() if k > 1}
    defined = {v for v in [*graph.inputs, *graph.initializers] if v}
    for node in graph.nodes:
        for name in node.inputs:
            if not name:
                continue
            if name not in ndefs:
                problems.add(("undefined", name))
            elif name not in defined:
                problems.add(("use_before_def", name))
        defined.update(o for o in node.outputs if o)
    problems |= {("undefined_output", v) for v in graph.outputs if v and v not in ndefs}
    return problems
    ### END SOLUTION


# %% grade_id="ssa_test" points=3
def _expect_ssa(g: Graph, expected: set, what: str) -> None:
    got = ssa_problems(g)
    check_true(type(got) is set, f"{what}: ssa_problems must return a set, got {type(got).__name__}")
    check_equal(got, expected, name=f"ssa_problems({what})")


ok = random_dag(np.random.default_rng(3))
_expect_ssa(ok, set(), "a well-formed random DAG")
_bad = Graph("bad", inputs=["x"], outputs=["y", "ghost"])  # the graph shown above, rebuilt here
_bad.nodes = [Node("Relu", ["t"], ["y"], name="uses_t_early"), Node("Exp", ["x"], ["t"], name="defines_t"),
              Node("Neg", ["x"], ["x"], name="redefines_x"), Node("Add", ["t", "nowhere"], ["z"], name="reads_nowhere")]
_expect_ssa(_bad, {("use_before_def", "t"), ("redefined", "x"), ("undefined", "nowhere"),
                  ("undefined_output", "ghost")}, "the hand-made bad graph")
### BEGIN HIDDEN TESTS
def _ssa_reference(graph):
    counts = {}
    for v in list(graph.inputs) + list(graph.initializers) + [o for n in graph.nodes for o in n.outputs]:
        if v:
            counts[v] = counts.get(v, 0) + 1
    out = {("redefined", v) for v, c in counts.items() if c > 1}
    seen = {v for v in list(graph.inputs) + list(graph.initializers) if v}
    for n in graph.nodes:
        for v in n.inputs:
            if v and v not in counts:
                out.add(("undefined", v))
            elif v and v not in seen:
                out.add(("use_before_def", v))
        seen |= {o for o in n.outputs if o}
    return out | {("undefined_output", v) for v in graph.outputs if v and v not in counts}


_rng = np.random.default_rng()
for _trial in range(30):
    _g = random_dag(_rng, n_nodes=int(_rng.integers(3, 20)))
    _kinds = [str(k) for k in _rng.choice(["redefine", "late", "undefined", "output", "selfloop", "none"],
                                          size=int(_rng.integers(1, 3)), replace=False)]
    for _kind in _kinds:
        _n = _g.nodes[int(_rng.integers(len(_g.nodes)))]
        if _kind == "redefine":
            _victim = str(_rng.choice(sorted(_g.value_names() - {""})))
            _g.nodes.insert(int(_rng.integers(len(_g.nodes) + 1)), Node("Relu", ["in0"], [_victim], name="dup"))
        elif _kind == "late":
            _g.nodes.remove(_n)
            _g.nodes.append(_n)  # its readers now come before it
        elif _kind == "undefined":
            _n.inputs[int(_rng.integers(len(_n.inputs)))] = f"missing{_trial}"
        elif _kind == "output":
            _g.outputs.append(f"no_such_output{_trial}")
        elif _kind == "selfloop":
            _n.inputs.append(_n.outputs[0])
    _expect_ssa(_g, _ssa_reference(_g), f"hidden random graph #{_trial} broken by {_kinds}")
### END HIDDEN TESTS
print("ssa_problems: visible tests passed")

# %% [markdown]
# ## 6. Shape inference for Conv — Exercise 3 (2 points)
#
# Every op in the registry knows how to compute its output type from its input types (`infer`), which
# lets the importer type every value without running the model. For a convolution in ONNX semantics:
#
# * `X` has shape `(N, C, D1, ..., Dk)`, the weight `W` has shape `(M, C/group, K1, ..., Kk)`;
# * `strides` (default all 1), `dilations` (default all 1) and `pads` = `[b1, ..., bk, e1, ..., ek]`
#   (all begins, then all ends; default all 0);
# * a dilated kernel spans `d*(K-1)+1` inputs, so the output has
#   `floor((D + b + e - d*(K-1) - 1) / s) + 1` positions along each spatial axis;
# * the output is `(N, M, O1, ..., Ok)`.

# %%
from infopt.ir import get_op

stem = get_op("Conv").infer([TensorType((1, 3, 224, 224)), TensorType((64, 3, 7, 7))],
                            {"strides": [2, 2], "pads": [3, 3, 3, 3]})
print("ResNet stem conv 7x7/2 on 224x224 ->", stem[0])

# %% [markdown]
# Explore how kernel size, stride, padding and dilation change the output (the library's Conv inference):

# %%
import ipywidgets as widgets


def conv_explorer(size=32, kernel=3, stride=1, pad=1, dilation=1):
    x_t, w_t = TensorType((1, 8, size, size)), TensorType((16, 8, kernel, kernel))
    attrs = {"strides": [stride] * 2, "pads": [pad] * 4, "dilations": [dilation] * 2}
    try:
        out = get_op("Conv").infer([x_t, w_t], attrs)[0]
        print(f"X {x_t}  *  W {w_t}  ->  {out}   (the dilated kernel spans {dilation * (kernel - 1) + 1} pixels)")
    except GraphError as err:
        print("not a valid Conv:", err)


widgets.interact(conv_explorer, size=(4, 64), kernel=(1, 7), stride=(1, 4), pad=(0, 3), dilation=(1, 4));

# %% [markdown]
# **Implement `conv_output_shape(x_shape, w_shape, strides=None, pads=None, dilations=None, group=1)`**:
# return the output shape as a `tuple` of Python `int`s, for any number `k >= 1` of spatial dims. `None`
# means the default above. Raise `ValueError` (with a message saying what is wrong) when
# * `x_shape` and `w_shape` have different lengths, or fewer than 3 entries, or the attributes have the wrong length;
# * the channels do not match: `C != W.shape[1] * group` (grouped conv: each group sees `C/group` channels);
# * `M` is not divisible by `group`;
# * an output spatial size would be smaller than 1 (kernel larger than the padded input).
#
# Do not call the library's Conv inference. The hidden tests compare with the shapes of real
# `torch.nn.functional.conv*d` outputs on random configurations (strides, asymmetric pads, dilations, groups).

# %% solution=true grade_id="conv_shape"
def conv_output_shape(x_shape, w_shape, strides=None, pads=None, dilations=None, group=1) -> tuple[int, ...]:
    """Output shape of an ONNX Conv of an input shaped `x_shape` with a weight shaped `w_shape`."""
    ### BEGIN SOLUTION
    x_shape, w_shape = tuple(int(d) for d in x_shape), tuple(int(d) for d in w_shape)
    if len(x_shape) != len(w_shape) or len(x_shape) < 3:
        raise ValueError(f"X {x_shape} and W {w_shape} must have the same rank >= 3 (N, C, spatial...)")
    k = len(x_shape) - 2
    strides = list(strides) if strides is not None else [1] * k
    dilations = list(dilations) if dilations is not None else [1] * k
    pads = list(pads) if pads is not None else [0] * (2 * k)
    if len(strides) != k or len(dilations) != k or len(pads) != 2 * k:
        raise ValueError(f"need {k} strides, {k} dilations and {2 * k} pads; got {strides}, {dilations}, {pads}")
    n, c = x_shape[:2]
    m, c_per_group = w_shape[:2]
    if c != c_per_group * group:
        raise ValueError(f"channel mismatch: X has {c} channels but W expects {c_per_group} x group {group}")
    if m % group:
        raise ValueError(f"{m} output channels cannot be split into {group} groups")
    out = [n, m]
    for i in range(k):
        span = x_shape[2 + i] + pads[i] + pads[k + i] - dilations[i] * (w_shape[2 + i] - 1) - 1
        if span < 0:
            raise ValueError(f"spatial axis {i}: the dilated kernel is larger than the padded input")
        out.append(span // strides[i] + 1)
    return tuple(out)
    ### END SOLUTION


# %% grade_id="conv_shape_test" points=2
check_equal(conv_output_shape((1, 3, 224, 224), (64, 3, 7, 7), strides=[2, 2], pads=[3, 3, 3, 3]),
            (1, 64, 112, 112), name="ResNet stem: conv_output_shape((1,3,224,224), (64,3,7,7), strides=[2,2], pads=[3]*4)")
check_equal(conv_output_shape((2, 8, 10, 10), (8, 1, 3, 3), group=8), (2, 8, 8, 8),
            name="depthwise 3x3, no padding")
check_equal(conv_output_shape((1, 4, 17, 17), (6, 4, 3, 3), dilations=[2, 2], pads=[1, 0, 1, 0]), (1, 6, 15, 13),
            name="dilation 2 with asymmetric pads [1, 0, 1, 0]", hint="a dilated kernel spans d*(K-1)+1 inputs")
check_raises(ValueError, conv_output_shape, (1, 3, 8, 8), (4, 2, 3, 3), name="conv_output_shape(3 channels, W for 2)")
### BEGIN HIDDEN TESTS
import torch.nn.functional as _F


def _torch_conv_shape(xs, ws, s, p, d, grp):
    _k = len(xs) - 2
    _pad = []
    for _i in reversed(range(_k)):  # F.pad: last axis first, (begin, end) pairs
        _pad += [p[_i], p[_k + _i]]
    _x = _F.pad(torch.zeros(xs), _pad)
    _conv = {1: _F.conv1d, 2: _F.conv2d, 3: _F.conv3d}[_k]
    return tuple(int(v) for v in _conv(_x, torch.zeros(ws), stride=s, dilation=d, groups=grp).shape)


_rng = np.random.default_rng()
with torch.no_grad():
    for _trial in range(40):
        _k = int(_rng.choice([1, 2, 2, 2, 3]))
        _grp = int(_rng.choice([1, 1, 2, 3]))
        _c, _m = _grp * int(_rng.integers(1, 3)), _grp * int(_rng.integers(1, 3))
        _ks = [int(v) for v in _rng.integers(1, 4, size=_k)]
        _d = [int(v) for v in _rng.integers(1, 4, size=_k)]
        if _trial % 2 == 0:
            _d[0] = 2  # always some dilation
        _s = [int(v) for v in _rng.integers(1, 4, size=_k)]
        _p = [int(v) for v in _rng.integers(0, 3, size=2 * _k)]
        _xs = [int(_rng.integers(1, 3)), _c] + [int(v) for v in _rng.integers(7 if _k < 3 else 7, 14 if _k < 3 else 9, size=_k)]
        _ws = [_m, _c // _grp] + _ks
        _want = _torch_conv_shape(_xs, _ws, _s, _p, _d, _grp)
        check_equal(conv_output_shape(tuple(_xs), tuple(_ws), strides=_s, pads=_p, dilations=_d, group=_grp), _want,
                    name=f"conv_output_shape({tuple(_xs)}, {tuple(_ws)}, strides={_s}, pads={_p}, dilations={_d}, group={_grp})")
    for _trial in range(5):
        _grp = int(_rng.choice([1, 2, 4]))
        _c = _grp * int(_rng.integers(1, 4))
        _xs = (1, _c + int(_rng.integers(1, 3)), 9, 9)  # one or two channels too many
        check_raises(ValueError, conv_output_shape, _xs, (_grp * 2, _c // _grp, 3, 3), None, None, None, _grp,
                     name=f"conv_output_shape({_xs}, W for {_c} channels, group={_grp})")
    check_raises(ValueError, conv_output_shape, (1, 4, 5, 5), (6, 2, 3, 3), None, None, None, 4,
                 name="conv_output_shape(4 channels, group=4, W with 2 channels per group)")
    check_raises(ValueError, conv_output_shape, (1, 2, 4, 4), (3, 2, 3, 3), None, None, [3, 3], 1,
                 name="conv_output_shape(4x4 input, 3x3 kernel with dilation 3 -> spans 7)")
### END HIDDEN TESTS
print("conv_output_shape: visible tests passed")

# %% [markdown]
# ## 7. ONNX as interchange: opsets, shape inference, the version converter
#
# An ONNX file is a protobuf holding a graph (nodes in topological order, initializers, typed inputs and
# outputs) plus the **opsets** it uses: `ai.onnx` version 17 means "each op means what the spec said in
# opset 17". Ops change between opsets, so a runtime supports a range of them and converters move a
# model between versions.
#
# **Shape inference** (`onnx.shape_inference.infer_shapes`) adds a `value_info` entry — a type — for
# every intermediate value, using each op's inference rule:

# %%
from onnx import shape_inference, version_converter

print("value_info before:", len(small_onnx.graph.value_info))
inferred = shape_inference.infer_shapes(small_onnx)
for vi in inferred.graph.value_info:
    dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
    print(f"  {vi.name:40s} {onnx.TensorProto.DataType.Name(vi.type.tensor_type.elem_type)} {dims}")

# %% [markdown]
# The **version converter** rewrites a model from one opset to another, adapting the ops whose meaning
# changed. From opset 17 to 18, `ReduceMean` moved its `axes` from an attribute to a second input:

# %%
converted = version_converter.convert_version(small_onnx, 18)


def _describe(model: onnx.ModelProto, op: str) -> str:
    for n in model.graph.node:
        if n.op_type == op:
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
            return f"inputs={list(n.input)} attrs={attrs}"
    return "(absent)"


for model, label in ((small_onnx, "opset 17"), (converted, "opset 18")):
    print(f"{label}: ReduceMean {_describe(model, 'ReduceMean')}")
print("new nodes added by the converter:",
      sorted({n.op_type for n in converted.graph.node} - {n.op_type for n in small_onnx.graph.node}) or "none",
      "| node count", len(small_onnx.graph.node), "->", len(converted.graph.node))
onnx.checker.check_model(converted)
print("the converted model passes onnx.checker")

# %% [markdown]
# ## 8. ResNet-18 as a graph
#
# `infopt.models.resnet18()` is ResNet-18 in plain torch with seeded random weights (nothing is downloaded).
# We reset its BatchNorm layers to their initial state — weight 1, bias 0, running mean 0, running
# variance 1, as in any freshly built model — and export it with `do_constant_folding=False`, so the
# BatchNorms stay as nodes. Then we import the ONNX file into our IR with `infopt.ir.onnx_io.from_onnx`.

# %%
from infopt.ir.onnx_io import from_onnx
from infopt.models import resnet18

RES = 64  # input resolution: small keeps the numpy interpreter quick; the graph is the same at 224
resnet = resnet18(seed=0)
for m in resnet.modules():
    if isinstance(m, nn.BatchNorm2d):
        m.reset_parameters()  # weight=1, bias=0, running_mean=0, running_var=1
resnet_onnx = export_onnx(resnet, torch.zeros(1, 3, RES, RES), do_constant_folding=False)
rg = from_onnx(resnet_onnx)
print(repr(rg))
print(rg.op_counts())

# %% [markdown]
# Where do the `Identity` nodes come from? The model has no identity layer. The TorchScript exporter
# **deduplicates initializers with equal contents**: every fresh BatchNorm has `weight == running_var`
# (all ones) and `bias == running_mean` (all zeros), and all BatchNorms of the same width hold equal
# tensors, so the exporter keeps one tensor per distinct content and defines every copy as `Identity(first)`. They cost a copy each at run time (or an alias the runtime must discover),
# and they hide the fact that these are constants. Likewise, `Dropout` in inference mode and a pair of
# `Transpose`s that undo each other compute nothing: they are **redundant nodes**.

# %%
identity_nodes = [n for n in rg.nodes if n.op == "Identity"]
for n in identity_nodes[:4]:
    print(f"{n.label:30s} {n.inputs[0]} -> {n.outputs[0]}  (input is a constant: {rg.is_constant(n.inputs[0])})")
print(f"... {len(identity_nodes)} Identity nodes in total, out of {len(rg.nodes)}")

# %% [markdown]
# The same graph in [Netron](https://netron.app), served from this machine on 127.0.0.1 (it is stopped at
# the end of the notebook), and in infopt's plotly view (nodes coloured by op kind; hover for types and shapes):

# %%
from infopt.widgets.netron_view import show_netron

show_netron(resnet_onnx, height=500)

# %%
from infopt.widgets.graph_view import plot_graph

plot_graph(rg, title="ResNet-18 (redundant Identity nodes ringed)", highlight={n.name for n in identity_nodes})

# %% [markdown]
# **Implement `remove_redundant(graph)`**: return a **new** `Graph` (start from `graph.copy()`; leave
# `graph` itself unchanged) without these nodes:
#
# * every `Identity` node;
# * every `Dropout` node that has a single output (inference mode: the output equals the input);
# * a `Transpose` `T2` whose input is the output of another `Transpose` `T1`, when the two permutations
#   cancel — applying `p1` then `p2` gives back the original axis order, i.e. `p1[p2[i]] == i` for every `i`
#   (`perm` is the attribute `node.attrs["perm"]`, a list or tuple). The readers of `T2`'s output then read
#   `T1`'s input; `T1` is removed too once nothing reads its output (and it is not a graph output).
#
# Rules: when a node is removed, every reader of its output must read the node's input instead
# (`Graph.replace_uses` does that). A node whose output is one of `graph.outputs` is **kept** — the result's
# `outputs` list must be exactly the original one. Repeat until nothing changes (removing an `Identity` can
# make two `Transpose`s adjacent). Everything else stays: same `inputs`, `outputs` and `initializers`, the
# other nodes in their original relative order.
#
# The tests check that the result verifies (`verify`), that it computes the same outputs as the original
# on random inputs (`infopt.ir.interpreter.run_graph`), which nodes remain, and that the original graph
# is untouched. The hidden graphs mix Identity, Dropout, cancelling and non-cancelling Transpose pairs
# and redundant nodes that define graph outputs.

# %% solution=true grade_id="redundant"
def remove_redundant(graph: Graph) -> Graph:
    """A copy of `graph` without Identity, inference Dropout and cancelling Transpose pairs."""
    ### BEGIN SOLUTION
    g = graph.copy()
    keep = set(g.outputs)

    def passthrough(node: Node, producers: dict) -> tuple[str, Node | None] | None:
        """(value that node's output equals, a Transpose that may become dead) or None."""
        if node.op == "Identity" or (node.op == "Dropout" and len(node.outputs) == 1):
            return node.inputs[0], None
        if node.op == "Transpose":
            first = producers.get(node.inputs[0])
            if first is not None and first.op == "Transpose":
                p1, p2 = list(first.attrs["perm"]), list(node.attrs["perm"])
                if len(p1) == len(p2) and [p1[i] for i in p2] == list(range(len(p2))):
                    return first.inputs[0], first
        return None

    changed = True
    while changed:
        changed = False
        producers = g.producers()
        for node in g.nodes:
            if any(o in keep for o in node.outputs):
                continue
            found = passthrough(node, producers)
            if found is None:
                continue
            source, first = found
            g.replace_uses(node.outputs[0], source)
            g.remove_nodes([node])
            if first is not None and first.outputs[0] not in keep and not g.consumers().get(first.outputs[0]):
                g.remove_nodes([first])  # nothing reads the first Transpose any more
            changed = True
            break
    return g
    ### END SOLUTION


# %% grade_id="redundant_test" points=3
from infopt.ir.interpreter import run_graph
from infopt.ir.verify import verify


def _check_clean(original: Graph, cleaned: Graph, expected_ops: dict, feeds: dict, what: str) -> None:
    check_true(isinstance(cleaned, Graph), f"{what}: remove_redundant must return a Graph, got {type(cleaned).__name__}")
    check_equal(list(cleaned.outputs), list(original.outputs), name=f"{what}: graph outputs",
                hint="a node that defines a graph output must stay")
    check_equal(list(cleaned.inputs), list(original.inputs), name=f"{what}: graph inputs")
    check_equal(cleaned.op_counts(), expected_ops, name=f"{what}: op counts of the cleaned graph")
    try:
        verify(cleaned)
    except GraphError as err:
        check_true(False, f"{what}: the cleaned graph does not verify: {err}")
    want, got = run_graph(original, feeds), run_graph(cleaned, feeds)
    for name in original.outputs:
        check_array(np.asarray(got[name]), np.asarray(want[name]), rtol=1e-5, atol=1e-6,
                    name=f"{what}: output %{name}")


_before = (len(rg.nodes), list(rg.outputs))
rg_clean = remove_redundant(rg)
check_equal((len(rg.nodes), list(rg.outputs)), _before, name="the original ResNet-18 graph (must be unchanged)")
_want_ops = {k: v for k, v in rg.op_counts().items() if k != "Identity"}
_want_ops = dict(sorted(_want_ops.items(), key=lambda kv: (-kv[1], kv[0])))
_x = np.random.default_rng(0).standard_normal((1, 3, RES, RES)).astype(np.float32)
_check_clean(rg, rg_clean, _want_ops, {rg.inputs[0]: _x}, "ResNet-18")

# A small graph: x -> Transpose(0,2,3,1) -> Identity -> Transpose(0,3,1,2) -> Relu -> Dropout -> y
small = Graph("small")
_v = small.add_input("x", TensorType((2, 3, 4, 5)))
_v = small.add_node("Transpose", [_v], {"perm": [0, 2, 3, 1]}).outputs[0]
_v = small.add_node("Identity", [_v]).outputs[0]
_v = small.add_node("Transpose", [_v], {"perm": [0, 3, 1, 2]}).outputs[0]
_v = small.add_node("Relu", [_v]).outputs[0]
small.outputs = [small.add_node("Dropout", [_v]).outputs[0]]  # defines the output: stays
_feeds = {"x": np.random.default_rng(1).standard_normal((2, 3, 4, 5)).astype(np.float32)}
_check_clean(small, remove_redundant(small), {"Dropout": 1, "Relu": 1}, _feeds, "the small Transpose/Identity chain")
### BEGIN HIDDEN TESTS
def _hidden_redundant_graph(rng):
    """A random graph of same-shaped values mixing useful and redundant nodes; returns (graph, expected op counts)."""
    g = Graph("hidden")
    vals = [g.add_input("x", TensorType((2, 3, 4, 5))), g.add_input("y", TensorType((2, 3, 4, 5)))]
    keep: dict = {}
    outs = []
    perms = [([0, 2, 3, 1], [0, 3, 1, 2]), ([0, 3, 1, 2], [0, 2, 3, 1]), ([0, 1, 3, 2], [0, 1, 3, 2]),
             ([3, 2, 1, 0], [3, 2, 1, 0]), ([1, 2, 3, 0], [3, 0, 1, 2])]

    def add(op, ins, attrs=None, useful=True):
        node = g.add_node(op, ins, attrs or {})
        if useful:
            keep[op] = keep.get(op, 0) + 1
        return node.outputs[0]

    for _ in range(int(rng.integers(6, 14))):
        a = vals[int(rng.integers(len(vals)))]
        kind = rng.choice(["Relu", "Add", "Mul", "Identity", "Dropout", "cancel", "cancel_via_identity",
                           "equal_perms", "shared_first"])
        if kind in ("Relu",):
            vals.append(add("Relu", [a]))
        elif kind in ("Add", "Mul"):
            vals.append(add(str(kind), [a, vals[int(rng.integers(len(vals)))]]))
        elif kind in ("Identity", "Dropout"):
            vals.append(add(str(kind), [a], useful=False))
        elif kind in ("cancel", "cancel_via_identity"):
            p1, p2 = perms[int(rng.integers(len(perms)))]
            t = add("Transpose", [a], {"perm": p1}, useful=False)
            if kind == "cancel_via_identity":
                t = add("Identity", [t], useful=False)
            vals.append(add("Transpose", [t], {"perm": p2}, useful=False))
        elif kind == "equal_perms":  # (0,2,3,1) twice is not the identity: both stay
            t = add("Transpose", [a], {"perm": [0, 2, 3, 1]})
            t = add("Transpose", [t], {"perm": [0, 2, 3, 1]})
            outs.append(add("Relu", [t]))
        else:  # the first Transpose has another reader: it stays, the second goes
            p1, p2 = perms[int(rng.integers(2))]
            t = add("Transpose", [a], {"perm": p1})
            outs.append(add("Relu", [t]))
            vals.append(add("Transpose", [t], {"perm": p2}, useful=False))
    # redundant nodes that define graph outputs are kept
    last = vals[-1]
    outs.append(add("Identity", [last]))
    if rng.random() < 0.5:
        outs.append(add("Dropout", [vals[int(rng.integers(len(vals)))]]))
    g.outputs = outs
    return g, dict(sorted(keep.items(), key=lambda kv: (-kv[1], kv[0])))


_rng = np.random.default_rng()
for _trial in range(12):
    _g, _want = _hidden_redundant_graph(_rng)
    _text_before = [(n.op, list(n.inputs), list(n.outputs)) for n in _g.nodes]
    _feeds = {v: _rng.standard_normal((2, 3, 4, 5)).astype(np.float32) for v in _g.inputs}
    _check_clean(_g, remove_redundant(_g), _want, _feeds, f"hidden random graph #{_trial}")
    check_true([(n.op, list(n.inputs), list(n.outputs)) for n in _g.nodes] == _text_before,
               f"hidden random graph #{_trial}: remove_redundant modified its input graph (use graph.copy())")
### END HIDDEN TESTS
print("remove_redundant: visible tests passed")

# %% [markdown]
# ## 9. Graph IR vs linearized IR
#
# The graph view answers "who depends on whom" and is what rewrites want. A backend eventually needs a
# **linear** program: one instruction after another, each reading values computed by earlier
# instructions — a topological order made explicit. tinygrad, for instance, turns each kernel into a flat
# list of *uops*; LLVM IR inside a basic block is a list too. `infopt.ir.linear` converts between the two views:

# %%
from infopt.ir.linear import format_linear, from_linear, to_linear
from infopt.ir.verify import graph_diff

lin = to_linear(rg.copy())
start = next(i for i, op in enumerate(lin) if op.op == "Conv")  # after the Identity copies of constants
print(f"ResNet-18 as {len(lin)} instructions; entries {start}..{start + 9} "
      "(a source is an earlier entry's position, or %name for an input or constant):")
print(format_linear(lin[start:start + 10], attrs=False))
back = from_linear(lin)
print("graph -> linear -> graph differences:", graph_diff(rg, back) or "none")

# %% [markdown]
# ### A short look at tinygrad's linearized IR
#
# tinygrad (unit 14 is its deep dive) builds a lazy graph of `UOp`s for a tensor expression, schedules
# it into kernels, and **linearizes** each kernel into a flat uop list — loads, ALU ops, loops (`RANGE`/`END`)
# and stores — that a renderer turns into C (on CPU, compiled by clang). Here is `relu(a @ b)` for 4×4 matrices.
# tinygrad's internals change quickly; if anything fails, the cell says why and the notebook goes on.

# %%
def tinygrad_uops(n: int = 4) -> None:
    """Print the linearized uops of relu(a @ b) for n x n matrices, and check the result against numpy."""
    import re

    from tinygrad import Device, Tensor
    from tinygrad.codegen import to_program
    from tinygrad.uop.ops import Ops

    a_np = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    b_np = np.random.default_rng(1).standard_normal((n, n)).astype(np.float32)
    a, b = Tensor(a_np).realize(), Tensor(b_np).realize()
    schedule = (a @ b).relu().schedule_linear()
    kernels = [u for u in schedule.src if u.op is Ops.CALL]
    print(f"schedule: {len(kernels)} kernel(s)")
    program = to_program(kernels[0].src[0], Device[Device.DEFAULT].renderer)
    uops = next(s for s in program.src if s.op is Ops.LINEAR).src
    index = {u: i for i, u in enumerate(uops)}
    for i, u in enumerate(uops):
        arg = re.sub(r"\x1b\[[0-9;]*m", "", str(u.arg))[:40] if u.op is not Ops.SINK else ""
        print(f"{i:3d} {str(u.op)[4:]:8s} {str(u.dtype)[7:]:10s} src={[index.get(s, '-') for s in u.src]} {arg}")
    got = (a @ b).relu().numpy()
    print("matches numpy:", bool(np.allclose(got, np.maximum(a_np @ b_np, 0), atol=1e-5)))


try:
    tinygrad_uops()
except Exception as err:  # tinygrad missing, clang missing, or an API change
    print(f"tinygrad could not show its uops here ({type(err).__name__}: {err}); see unit 14")

# %% [markdown]
# How to read it (tinygrad 0.14 on CPU): the `PARAM`s are the three buffers (output first, then `a` and `b`);
# `RANGE` … `END` open and close the loops over rows and columns; the reduction over `k` was unrolled by
# tinygrad's optimizer into four `LOAD`/`MUL`/`ADD` groups; `CMPLT` + `WHERE` is the relu; one `STORE` writes
# each output element. In our linear form an entry is a whole tensor op; here an entry is a scalar
# instruction inside a loop nest — the lowering that units 03, 06 and 11 build step by step.

# %% [markdown]
# ## 10. Liveness over the linear form — Exercise 5 (2 points)
#
# In linear form, each value lives from the instruction that defines it to the last instruction that
# reads it. After that **last use** its buffer can be freed or reused — the basis of memory planning
# (unit 02). SSA makes this exact: one definition, and every use is visible.
#
# **Implement `free_after(graph)`**: treat `graph.nodes` as the linear program (assume it is a valid order).
# Return a `list` with one entry per node; entry `i` is the **sorted** list of value names that can be freed
# right after node `i` runs:
# * only values defined by nodes (never graph inputs or initializers), and never names in `graph.outputs`;
# * a value is freed after the last node that reads it, or — if no node reads it — right after the node
#   that defines it (e.g. an unused second output of a multi-output node);
# * empty names `""` are ignored.
#
# The hidden tests use random graphs with multi-output nodes whose outputs are sometimes never read.

# %% solution=true grade_id="liveness"
def free_after(graph: Graph) -> list[list[str]]:
    """For each node (in stored order), the sorted names of the values whose last use it is."""
    ### BEGIN SOLUTION
    last: dict[str, int] = {}
    for i, node in enumerate(graph.nodes):
        for out in node.outputs:
            if out:
                last[out] = i
    for i, node in enumerate(graph.nodes):
        for name in node.inputs:
            if name in last:
                last[name] = max(last[name], i)
    result: list[list[str]] = [[] for _ in graph.nodes]
    for name, i in last.items():
        if name not in graph.outputs:
            result[i].append(name)
    return [sorted(r) for r in result]
    ### END SOLUTION


# %% grade_id="liveness_test" points=2
chain = Graph("chain", inputs=["x"], outputs=["y"])
chain.nodes = [Node("Exp", ["x"], ["a"], name="n0"), Node("Split", ["a"], ["b", "unused"], name="n1"),
               Node("Add", ["a", "b"], ["c"], name="n2"), Node("Relu", ["c"], ["y"], name="n3")]
check_equal(free_after(chain), [[], ["unused"], ["a", "b"], ["c"]], name="free_after(chain)",
            hint="'unused' is never read: free it right after the node that defines it")
### BEGIN HIDDEN TESTS
def _free_after_reference(graph):
    defined_at, last_read = {}, {}
    for i, n in enumerate(graph.nodes):
        for o in n.outputs:
            if o:
                defined_at[o] = i
        for v in n.inputs:
            if v:
                last_read[v] = i
    res = [[] for _ in graph.nodes]
    for v, i in defined_at.items():
        if v not in set(graph.outputs):
            res[max(i, last_read.get(v, i))].append(v)
    return [sorted(r) for r in res]


_rng = np.random.default_rng()
for _trial in range(25):
    _g = random_dag(_rng, n_nodes=int(_rng.integers(1, 25)), p_multi=0.4)
    check_equal(free_after(_g), _free_after_reference(_g), name=f"free_after(hidden random graph #{_trial})")
### END HIDDEN TESTS
print("free_after: visible tests passed")

# %% [markdown]
# What liveness buys: run through ResNet-18's linear order, allocating each node's outputs and freeing
# what `free_after` says. Keeping every intermediate alive would need the sum of all of them; freeing at
# last use needs only the peak of the curve.

# %%
def live_bytes(graph: Graph) -> list[int]:
    """Bytes of node-defined values alive during each step, freeing at last use (uses your free_after)."""
    frees = free_after(graph)
    live, curve = 0, []
    for node, dead in zip(graph.nodes, frees):
        live += sum(graph.type_of(o).nbytes for o in node.outputs if o)
        curve.append(live)
        live -= sum(graph.type_of(v).nbytes for v in dead)
    return curve


try:
    ordered = rg.copy()
    ordered.nodes = ordered.toposort()
    curve = live_bytes(ordered)
    total = sum(ordered.type_of(o).nbytes for n in ordered.nodes for o in n.outputs)
    fig = go.Figure(go.Scatter(y=np.array(curve) / 2**20, mode="lines", name="live"))
    fig.add_hline(y=total / 2**20, line_dash="dash", annotation_text="no freeing (sum of all intermediates)")
    fig.update_layout(title=f"ResNet-18 at {RES}x{RES}: live intermediate memory per step "
                            f"(peak {max(curve) / 2**20:.2f} MiB vs {total / 2**20:.2f} MiB)",
                      xaxis_title="step (node index in linear order)", yaxis_title="MiB", height=350)
    display(fig)
except NotImplementedError:
    print("implement free_after (Exercise 5) to see ResNet-18's memory curve")

# %% [markdown]
# ## Wrap-up
#
# * A model becomes a DAG of typed SSA values; fx, torch.export and ONNX each keep a different slice of it
#   (module structure; ATen ops with shapes and lifted parameters; portable, versioned ops with initializers).
# * SSA turns def-use questions into lookups, which makes verification, rewriting and liveness exact.
# * Shape inference types every value from the op rules, without running the model.
# * Exporters leave redundant nodes behind; removing them is the first graph pass. Unit 02 continues
#   with constant folding, BatchNorm folding, fusion and memory planning.
#
# The Netron server above lives in a thread of this kernel: it stops when the kernel stops (or call
# `stop_all()` yourself once you are done looking). It is not stopped here, so that after *Run All* the view
# above can still load while you scroll back up to it.

# %%
print(f"notebook ran in {time.perf_counter() - _T0:.1f} s")
