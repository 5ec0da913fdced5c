"""BYOC ("bring your own codegen") on the infopt graph: annotate -> partition -> replace by AccelCall nodes.

As in TVM's flow: ``annotate`` marks each node the accelerator can take (MatMul, Gemm, Conv through
im2col, and a ReLU that can ride on the output path of one of them); ``partition`` groups marked nodes
into subgraphs that respect dependencies (a node joins its producer's group only if none of its inputs
reaches that group through a node outside it, which would make a cycle); ``PartitionForAccel`` replaces
each group by one ``AccelCall`` node that runs its layers' command streams on the simulator. Everything
else stays on the CPU interpreter.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import numpy as np

from ..ir.graph import Graph, Node
from ..passes.base import Pass, PassSkipped
from .config import AccelConfig, AccelError
from .lowering import ACCEL_OPS, OffloadReport, call_attrs, collect_report, conv_params
from .tiling import tiling

_IR_DTYPE = {"float32": "f32", "int8": "i8"}


@dataclass(frozen=True)
class Annotation:
    """Where a node runs ('accel' or 'cpu') and why."""

    target: str
    reason: str

    @property
    def offload(self) -> bool:
        """True when the node goes to the accelerator."""
        return self.target == "accel"


def layer_shape(graph: Graph, node: Node) -> tuple[int, int, int]:
    """The (M, N, K) of the matmul a MatMul/Gemm/Conv node becomes, or an AccelError saying why it cannot."""
    if node.op not in ACCEL_OPS:
        raise AccelError(f"op {node.op} has no accelerator codegen (it runs {', '.join(ACCEL_OPS)} and a fused Relu)")
    ts = [graph.type_of(i) if i else None for i in node.inputs]
    a, b = ts[0].shape, ts[1].shape
    if node.op == "MatMul":
        if len(b) != 2 or len(a) < 2:
            raise AccelError(f"MatMul {a} x {b}: only (..., K) x (K, N) is offloaded")
        return int(np.prod(a[:-1])), b[1], a[-1]
    if node.op == "Gemm":
        at = node.attrs
        if at.get("transA", 0) or float(at.get("alpha", 1.0)) != 1.0 or float(at.get("beta", 1.0)) != 1.0:
            raise AccelError("Gemm with transA, alpha != 1 or beta != 1 is not offloaded")
        n = b[0] if at.get("transB", 0) else b[1]
        if len(ts) > 2 and ts[2] is not None and (ts[2].size != n or (len(ts[2].shape) == 2 and ts[2].shape[0] != 1)):
            raise AccelError(f"Gemm bias of shape {ts[2].shape} is not a row of N={n}")
        return a[0], n, a[1]
    p = conv_params(a, b, node.attrs)
    return a[0] * p["out"][0] * p["out"][1], b[0], b[1] * b[2] * b[3]


def annotate(graph: Graph, config: AccelConfig) -> dict[str, Annotation]:
    """For every node (by name): may it run on the accelerator, and why (not)."""
    want = _IR_DTYPE[config.dtype]
    consumers = graph.consumers()
    producers = graph.producers()
    notes: dict[str, Annotation] = {}
    for node in graph.toposort():
        if node.op == "Relu":
            p = producers.get(node.inputs[0])
            if p is None or not notes.get(p.name, Annotation("cpu", "")).offload or p.op == "Relu":
                notes[node.name] = Annotation("cpu", "a ReLU runs on the accelerator only fused after MatMul/Gemm/Conv")
            elif len(consumers.get(node.inputs[0], [])) > 1 or node.inputs[0] in graph.outputs:
                notes[node.name] = Annotation("cpu", "its producer's output is used elsewhere too, so it cannot be fused")
            else:
                notes[node.name] = Annotation("accel", f"fused into the output path of {p.name}")
            continue
        try:
            dts = {graph.type_of(i).dtype for i in node.inputs if i}
            m, n, k = layer_shape(graph, node)
            if dts != {want}:
                raise AccelError(f"dtype {'/'.join(sorted(dts))} but the accelerator takes {want} ({config.dtype})")
            tiling(m, n, k, config)
        except AccelError as e:
            notes[node.name] = Annotation("cpu", str(e))
            continue
        notes[node.name] = Annotation("accel", f"matmul M={m} N={n} K={k}")
    return notes


def depends_on(graph: Graph, value: str, group: set[str]) -> bool:
    """Does ``value`` depend (through any chain of producers) on a node whose name is in ``group``?"""
    producers = graph.producers()
    stack, seen = [value], set()
    while stack:
        p = producers.get(stack.pop())
        if p is None or p.name in seen:
            continue
        if p.name in group:
            return True
        seen.add(p.name)
        stack.extend(i for i in p.inputs if i)
    return False


def may_join(graph: Graph, group: set[str], node: Node) -> bool:
    """May ``node`` join ``group``? Only if no input reaches the group through a node outside it (no cycle)."""
    producers = graph.producers()
    for i in node.inputs:
        p = producers.get(i) if i else None
        if p is not None and p.name not in group and depends_on(graph, i, group):
            return False
    return True


def partition(graph: Graph, offload: Iterable[str]) -> list[list[str]]:
    """Group the nodes named in ``offload`` (node names, in topological order within and across groups).

    In topological order, a node joins the group of the first producer of its inputs that is in a group
    and that it ``may_join``; otherwise it starts a new group.
    """
    offload = set(offload)
    producers = graph.producers()
    group_of: dict[str, int] = {}
    groups: list[list[str]] = []
    for node in graph.toposort():
        if node.name not in offload:
            continue
        chosen = None
        for i in node.inputs:
            p = producers.get(i) if i else None
            if p is not None and p.name in group_of and may_join(graph, set(groups[group_of[p.name]]), node):
                chosen = group_of[p.name]
                break
        if chosen is None:
            groups.append([])
            chosen = len(groups) - 1
        groups[chosen].append(node.name)
        group_of[node.name] = chosen
    return groups


def _replace_group(graph: Graph, names: list[str], config: AccelConfig, call: str) -> None:
    """Replace the nodes of one group by an AccelCall node in place."""
    members = [graph.node_by_name(n) for n in names]
    inside = {o for n in members for o in n.outputs}
    layers: list[dict[str, Any]] = []
    by_output: dict[str, dict[str, Any]] = {}
    for n in members:
        if n.op == "Relu":  # fused: the producer's layer now writes the ReLU's output through the output path
            layer = by_output.pop(n.inputs[0])
            layer["relu"], layer["output"] = True, n.outputs[0]
            by_output[n.outputs[0]] = layer
            continue
        layer = {"name": n.name, "op": n.op, "inputs": list(n.inputs), "attrs": dict(n.attrs),
                 "output": n.outputs[0], "relu": False}
        layers.append(layer)
        by_output[n.outputs[0]] = layer
    inputs: list[str] = []
    for layer in layers:
        inputs += [i for i in layer["inputs"] if i and i not in inside and i not in inputs]
    member_ids = {id(n) for n in members}
    read_outside = {i for n in graph.nodes if id(n) not in member_ids for i in n.inputs} | set(graph.outputs)
    outputs = [layer["output"] for layer in layers if layer["output"] in read_outside]
    out_types = [graph.type_of(o) for o in outputs]
    attrs = call_attrs(call, config, inputs, outputs, layers, out_types)
    graph.remove_nodes(members)
    graph.types.update(zip(outputs, out_types))  # remove_nodes forgot the types of what the group defined
    graph.nodes.append(Node("AccelCall", inputs, outputs, attrs, call))
    graph.nodes = graph.toposort()


class PartitionForAccel(Pass):
    """The BYOC pass: replace every group of offloadable nodes by an AccelCall node running on the simulator."""

    name = "partition_for_accel"

    def __init__(self, config: AccelConfig | None = None) -> None:
        self.config = config or AccelConfig(16, 16, "ws", "float32")

    def apply(self, graph: Graph) -> dict[str, Any]:
        """Annotate, partition and replace each group by an AccelCall node, in place."""
        notes = annotate(graph, self.config)
        offload = [n for n, a in notes.items() if a.offload]
        if not offload:
            raise PassSkipped(f"no node can run on the accelerator ({self.config.dtype} MatMul/Gemm/Conv)")
        groups = partition(graph, offload)
        for names in groups:
            _replace_group(graph, names, self.config, graph.fresh_name("accel_call"))
        return {"groups": len(groups), "offloaded": len(offload), "cpu": len(notes) - len(offload)}


def offload(graph: Graph, config: AccelConfig | None = None) -> Graph:
    """A copy of ``graph`` with the accelerator's partitions replaced by AccelCall nodes."""
    return PartitionForAccel(config).run(graph).graph


def execute(graph: Graph, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run a graph on the CPU interpreter (AccelCall nodes run on the simulator); returns its outputs."""
    from ..ir.interpreter import run_graph

    return run_graph(graph, feeds)


def run_offloaded(graph: Graph, feeds: Mapping[str, np.ndarray]) -> tuple[dict[str, np.ndarray], OffloadReport]:
    """Run an offloaded graph and collect the per-layer accelerator report: (outputs, report)."""
    with collect_report() as rep:
        outs = execute(graph, feeds)
    return outs, rep
