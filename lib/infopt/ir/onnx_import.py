"""ONNX import: ``from_onnx`` (ModelProto, path or bytes -> a typed Graph), natively at the model's opset.

The model is read as it is, at its own default-domain opset (13 up to the newest onnx defines): no version
conversion. Before onnx's checker runs, the import checks what the checker would report without naming the
node: every op is known, every value read is defined, the nodes form no cycle (nodes merely out of order are
sorted). Types come from infopt's own shape inference (``infopt.ir.ops``), node by node; onnx's shape inference
runs first and every static type it (or the model) declares must agree with ours, so a disagreement is found
here, not later. Shapes that onnx cannot infer but that are static in the model (a Slice whose bounds come from
shape arithmetic) are inferred by ours. 4-D activations of conv nets get the NCHW layout tag.

Every error names the node or value and says what to do.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from .errors import GraphError, UnsupportedOpError
from .graph import Graph
from .node import Node
from .ops import OPS, infer_node
from .ops.registry import INFOPT_DOMAIN
from .opset import MIN_OPSET, check_opset, max_opset
from .types import TensorType, onnx_dtype

ONNX_DOMAINS = ("", "ai.onnx")
LAYOUT_KEY = "infopt.layouts"  # metadata_props entry that keeps layout tags through a round trip
_CONV_OPS = {"Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "BatchNormalization", "ConvTranspose"}


class OnnxImportError(ValueError):
    """A model that cannot become a Graph: unreadable, ill-formed, or without static shapes; the message names
    the node or value at fault and what to do."""


# ----- reading ------------------------------------------------------------------------------------
def _load(model: Any, where: str):
    import onnx
    from google.protobuf.message import DecodeError

    if isinstance(model, onnx.ModelProto):
        m = onnx.ModelProto()
        m.CopyFrom(model)
        return m
    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        if not path.is_file():
            raise FileNotFoundError(f"ONNX file {path} does not exist")
        data = path.read_bytes()
    elif isinstance(model, (bytes, bytearray)):
        data = bytes(model)
    else:
        raise TypeError(f"from_onnx takes an onnx.ModelProto, a path or bytes, got {type(model).__name__}")
    if not data:
        raise OnnxImportError(f"{where} is empty (0 bytes): export the model again, or copy the complete file")
    try:
        m = onnx.load_from_string(data)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise OnnxImportError(
            f"{where} is not a readable ONNX model ({len(data)} bytes; protobuf parse failed: {e}). The file is "
            "truncated or not an .onnx ModelProto: export it again or copy the complete file"
        ) from None
    return m


def _check_complete(m, where: str) -> int:
    """The model's default-domain opset, after checking it has the parts a complete model has."""
    missing = [what for what, ok in (("graph", m.HasField("graph")), ("ir_version", m.ir_version > 0),
                                     ("opset_import", len(m.opset_import) > 0)) if not ok]
    if missing:
        raise OnnxImportError(
            f"{where} has no {', '.join(missing)}: the file is empty or truncated (or not an ONNX model). Export it "
            "again, or copy the complete file"
        )
    opset = next((int(o.version) for o in m.opset_import if o.domain in ONNX_DOMAINS), None)
    if opset is None:
        raise OnnxImportError(f"{where} imports no default-domain (ai.onnx) opset; its opset_import lists "
                              f"{[(o.domain, o.version) for o in m.opset_import]}")
    try:
        return check_opset(opset, where)
    except ValueError as e:
        raise OnnxImportError(str(e)) from None


def _node_label(n, i: int) -> str:
    return f"{n.name or '#' + str(i)} ({n.op_type})"


def _check_ops(m, where: str, opset: int) -> None:
    """Every node's op must be in the registry, in its domain; the error names the op, the node and the opset."""
    for i, n in enumerate(m.graph.node):
        opdef = OPS.get(n.op_type)
        dom_ok = opdef is not None and (n.domain in ONNX_DOMAINS if opdef.domain == "" else n.domain == opdef.domain)
        if not dom_ok:
            dom = f" in domain {n.domain!r}" if n.domain else ""
            std = sorted(k for k, v in OPS.items() if v.domain == "")
            raise UnsupportedOpError(
                f"{where}: op {n.op_type!r}{dom} (node {n.name or '#' + str(i)}, opset {opset}) is not supported "
                f"by the infopt IR. Supported ONNX ops: {', '.join(std)}. Re-export the model without it (or with "
                "it decomposed into these ops), or define the op in infopt.ir.ops."
            )


def _check_dataflow(m, where: str, declared: set[str]) -> None:
    """Each value read is defined by a graph input, an initializer or a node; nodes form no cycle. Nodes that are
    only out of order are put in topological order (in place) so the checker accepts them."""
    nodes = list(m.graph.node)
    producer: dict[str, int] = {}
    for i, n in enumerate(nodes):
        for o in n.output:
            if not o:
                continue
            if o in producer or o in declared:
                other = f"node {_node_label(nodes[producer[o]], producer[o])}" if o in producer else \
                    "a graph input or initializer"
                raise OnnxImportError(f"{where}: value %{o} is defined twice, by {other} and by node "
                                      f"{_node_label(n, i)}; each value must have one definition (rename one)")
            producer[o] = i
    for i, n in enumerate(nodes):
        for v in n.input:
            if v and v not in declared and v not in producer:
                raise OnnxImportError(
                    f"{where}: node {_node_label(n, i)} reads %{v}, which no node, graph input or initializer "
                    "defines. Fix the model (a missing initializer or a renamed value) or export it again")
    for vi in m.graph.output:
        if vi.name not in declared and vi.name not in producer:
            raise OnnxImportError(f"{where}: graph output %{vi.name} is not defined by any node, input or initializer")
    order, state = [], [0] * len(nodes)  # 1 visiting, 2 done
    for root in range(len(nodes)):
        if state[root]:
            continue
        stack = [(root, iter(nodes[root].input))]
        state[root] = 1
        while stack:
            i, it = stack[-1]
            for v in it:
                j = producer.get(v)
                if j is None or state[j] == 2:
                    continue
                if state[j] == 1:
                    cycle = [k for k, _ in stack[[s for s, _ in stack].index(j):]]
                    names = " -> ".join(_node_label(nodes[k], k) for k in cycle + [j])
                    raise OnnxImportError(
                        f"{where}: the nodes form a cycle: {names} (node {_node_label(nodes[i], i)} reads %{v}, "
                        f"which node {_node_label(nodes[j], j)} defines, which depends on it). An ONNX graph must be "
                        "acyclic: fix the model or export it again")
                state[j] = 1
                stack.append((j, iter(nodes[j].input)))
                break
            else:
                stack.pop()
                state[i] = 2
                order.append(i)
    if order != list(range(len(nodes))):
        sorted_nodes = [type(nodes[0])() for _ in order]
        for dst, k in zip(sorted_nodes, order):
            dst.CopyFrom(nodes[k])
        del m.graph.node[:]
        m.graph.node.extend(sorted_nodes)


def _fix_input_shapes(m, input_shapes: Mapping[str, Sequence[int]], where: str) -> None:
    """Replace the (possibly symbolic) dims of the named graph inputs by the given static ones."""
    names = [i.name for i in m.graph.input]
    for name, shape in input_shapes.items():
        if name not in names:
            raise OnnxImportError(f"{where}: input_shapes names {name!r}, but the graph inputs are {names}")
        vi = m.graph.input[names.index(name)]
        dims = vi.type.tensor_type.shape.dim
        if len(dims) and len(dims) != len(shape):
            raise OnnxImportError(f"{where}: input {name!r} has rank {len(dims)}, input_shapes gives {tuple(shape)}")
        del dims[:]
        for d in shape:
            dims.add().dim_value = int(d)


def _static_type(vi) -> TensorType | None:
    """The static TensorType an ONNX ValueInfo declares, or None when its shape or dtype is not fully known."""
    tt = vi.type.tensor_type
    if not vi.type.HasField("tensor_type") or not tt.HasField("shape"):
        return None
    if any(not d.HasField("dim_value") for d in tt.shape.dim):
        return None
    try:
        return TensorType(tuple(d.dim_value for d in tt.shape.dim), onnx_dtype(tt.elem_type, "value"))
    except GraphError:
        return None


def _input_type(vi, hint: str) -> TensorType:
    """The static TensorType of a graph input, or an error naming it and saying what to do."""
    what = f"graph input {vi.name!r}"
    if not vi.type.HasField("tensor_type"):
        kind = {"sequence_type": "a sequence", "optional_type": "an optional", "map_type": "a map",
                "sparse_tensor_type": "a sparse tensor"}.get(vi.type.WhichOneof("value"), "not a dense tensor")
        raise OnnxImportError(f"{what} is {kind}, not a tensor; the infopt IR holds tensors only (re-export the "
                              "model without sequences or optionals)")
    tt = vi.type.tensor_type
    try:
        dtype = onnx_dtype(tt.elem_type, what)
    except GraphError as e:
        raise OnnxImportError(str(e)) from None
    if not tt.HasField("shape") or any(not d.HasField("dim_value") for d in tt.shape.dim):
        dims = [d.dim_param or "?" for d in tt.shape.dim] if tt.HasField("shape") else "unknown rank"
        raise OnnxImportError(
            f"value {vi.name!r} ({what}) has no static shape (dims: {dims}). The infopt IR needs every shape known: "
            f"{hint}pass from_onnx(..., input_shapes={{'<input>': (n, c, ...)}}) or export with fixed input shapes."
        )
    return TensorType(tuple(d.dim_value for d in tt.shape.dim), dtype)


def attr_value(a, where: str) -> Any:
    """An ONNX attribute as a plain Python value: numbers, str, lists, numpy arrays for tensors."""
    from onnx import AttributeProto, helper, numpy_helper

    if a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS, AttributeProto.SPARSE_TENSOR,
                  AttributeProto.SPARSE_TENSORS, AttributeProto.TYPE_PROTO, AttributeProto.TYPE_PROTOS):
        raise OnnxImportError(f"{where}: attribute {a.name!r} of type {AttributeProto.AttributeType.Name(a.type)} "
                              "(subgraphs, sparse tensors, types) is not supported by the infopt IR; re-export the "
                              "model without control flow (If, Loop, Scan)")
    v = helper.get_attribute_value(a)
    if a.type == AttributeProto.TENSOR:
        try:
            onnx_dtype(v.data_type, f"{where}: attribute {a.name!r}")
        except GraphError as e:
            raise OnnxImportError(str(e)) from None
        return numpy_helper.to_array(v)
    if a.type == AttributeProto.TENSORS:
        return [numpy_helper.to_array(t) for t in v]
    if a.type == AttributeProto.STRING:
        return v.decode("utf-8")
    if a.type == AttributeProto.STRINGS:
        return [s.decode("utf-8") for s in v]
    if a.type in (AttributeProto.INTS, AttributeProto.FLOATS):
        return list(v)
    return v


def _strip_large_initializers(m, limit: int = 1024) -> None:
    """Turn initializers of more than ``limit`` elements into typed graph inputs, in place.

    The checker and shape inference serialize the whole model; weights are most of its bytes and
    shape inference needs only their types (small ones, e.g. Reshape targets, keep their values).
    """
    from onnx import helper

    declared = {i.name for i in m.graph.input}
    small = []
    for t in m.graph.initializer:
        if int(np.prod(t.dims, dtype=np.int64)) <= limit:
            small.append(t)
        elif t.name not in declared:
            m.graph.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    kept = [type(t)() for t in small]
    for dst, src in zip(kept, small):
        dst.CopyFrom(src)
    del m.graph.initializer[:]
    m.graph.initializer.extend(kept)


def _read_initializers(m, where: str) -> dict[str, np.ndarray]:
    from onnx import numpy_helper

    inits = {}
    for t in m.graph.initializer:
        try:
            onnx_dtype(t.data_type, f"{where}: initializer {t.name!r}")
            inits[t.name] = numpy_helper.to_array(t)
        except GraphError as e:
            raise OnnxImportError(str(e)) from None
        except Exception as e:  # external data missing, malformed raw data
            raise OnnxImportError(f"{where}: initializer {t.name!r} cannot be read as an array ({e}); if its data is "
                                  "stored in an external file, keep that file next to the model") from None
    return inits


def _checker_message(e: Exception) -> str:
    """onnx's checker message, whole (its node context comes after the first line), without blank lines."""
    return " | ".join(line.strip() for line in str(e).strip().splitlines() if line.strip())


# ----- the import ---------------------------------------------------------------------------------
def from_onnx(
    model: Any,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    name: str | None = None,
) -> Graph:
    """Import an ONNX model (ModelProto, path or bytes) as a typed Graph at the model's own opset.

    ``input_shapes`` fixes dynamic input dimensions ({"input": (1, 3, 224, 224)}) before inference.
    Errors: OnnxImportError (unreadable / ill-formed / no static shape / unsupported dtype), UnsupportedOpError.
    """
    import onnx

    where = f"ONNX file {model}" if isinstance(model, (str, os.PathLike)) else "ONNX model"
    m = _load(model, where)  # a private copy: edited in place below
    opset = _check_complete(m, where)
    _check_ops(m, where, opset)
    inits = _read_initializers(m, where)
    _check_dataflow(m, where, {i.name for i in m.graph.input} | set(inits))
    _strip_large_initializers(m)
    try:
        onnx.checker.check_model(m)
    except onnx.checker.ValidationError as e:
        raise OnnxImportError(f"{where} fails onnx.checker: {_checker_message(e)}") from None
    if input_shapes:
        _fix_input_shapes(m, input_shapes, where)
        del m.graph.value_info[:]  # inferred again below from the new input shapes
    onnx_note = ""
    try:
        m = onnx.shape_inference.infer_shapes(m, check_type=False, strict_mode=False, data_prop=True)
    except Exception as e:  # onnx's inference is a cross-check only: ours types every value
        onnx_note = f" (onnx's own shape inference failed too: {_checker_message(e)[:300]})"

    g = m.graph
    hint = "the graph inputs have dynamic dimensions; " if any(
        any(not d.HasField("dim_value") for d in i.type.tensor_type.shape.dim) for i in g.input
        if i.name not in inits) else ""
    graph = Graph(name or g.name or "graph", opset=opset)
    for arr_name, arr in inits.items():
        graph.add_initializer(arr_name, arr)
    conv_net = any(n.op_type in _CONV_OPS for n in g.node)
    layouts = json.loads(next((p.value for p in m.metadata_props if p.key == LAYOUT_KEY), "null"))
    for vi in g.input:
        if vi.name in inits:  # old exporters list initializers as inputs too
            continue
        t = _input_type(vi, hint)
        if layouts is None and conv_net and t.rank == 4:
            t = TensorType(t.shape, t.dtype, "NCHW")
        graph.add_input(vi.name, t)

    used_names: set[str] = set()
    for i, n in enumerate(g.node):
        node_name = n.name or f"{n.op_type}_{i}"
        while node_name in used_names:
            node_name = f"{node_name}_{i}"
        used_names.add(node_name)
        attrs = {a.name: attr_value(a, f"node {node_name} ({n.op_type})") for a in n.attribute}
        node = Node(n.op_type, list(n.input), list(n.output), attrs, node_name)
        importer = OPS[n.op_type].onnx_import
        graph.nodes.append(importer(node, opset) if importer else node)

    _type_nodes(graph, {vi.name: vi for vi in [*g.value_info, *g.output]}, layouts, where, hint, onnx_note)
    if layouts is not None:
        for v in graph.inputs:
            graph.types[v] = TensorType(graph.types[v].shape, graph.types[v].dtype, layouts.get(v))
    graph.outputs.extend(vi.name for vi in g.output)
    return graph


def _type_nodes(graph: Graph, infos: dict, layouts: dict | None, where: str, hint: str, onnx_note: str) -> None:
    """Every node output's type from infopt's inference, checked against the static types onnx (or the model)
    declares for it."""
    for node in graph.toposort():
        try:
            ours = infer_node(graph, node)
        except GraphError as e:
            outs = ", ".join(repr(o) for o in node.outputs if o)
            if "must be a constant" in str(e):
                raise OnnxImportError(
                    f"{where}: value {outs} (output of node {node.name}, {node.op}) has no static shape: {e}. "
                    f"{'Fix the input shapes (from_onnx(..., input_shapes=...)) or e' if hint else 'E'}xport the "
                    f"model with static shapes{onnx_note}") from None
            what = str(e) if str(e).startswith(f"node {node.label}") else f"node {node.name} ({node.op}): {e}"
            raise OnnxImportError(
                f"{where}: {what}. "
                f"{'Fix the input shapes (from_onnx(..., input_shapes=...)) or c' if hint else 'C'}heck the model: "
                f"the exporter wrote inputs or attributes this node cannot take{onnx_note}") from None
        except UnsupportedOpError as e:
            raise UnsupportedOpError(f"{where}: node {node.label}: {e}") from None
        for out, mine in zip(node.outputs, ours):
            if not out:
                continue
            if mine is None:
                raise OnnxImportError(f"value {out!r} (output of node {node.name}, {node.op}) has no static shape")
            theirs = _static_type(infos[out]) if out in infos else None
            if theirs is not None and (theirs.shape, theirs.dtype) != (mine.shape, mine.dtype):
                raise OnnxImportError(
                    f"{where}: node {node.name} ({node.op}): infopt infers {mine} for %{out} but the model (or onnx's "
                    f"shape inference) says {theirs}. If the model is right, the op's infer function in "
                    "infopt.ir.ops is wrong: report it with this model")
            layout = mine.layout if layouts is None else layouts.get(out)
            graph.types[out] = TensorType(mine.shape, mine.dtype, layout)


def opset_range() -> tuple[int, int]:
    """The default-domain opsets ``from_onnx`` reads natively: (13, newest onnx defines)."""
    return MIN_OPSET, max_opset()


__all__ = ["INFOPT_DOMAIN", "LAYOUT_KEY", "OnnxImportError", "from_onnx", "opset_range"]
