"""ONNX import and export: ``from_onnx`` (ModelProto or file -> Graph) and ``to_onnx`` (Graph -> ModelProto).

Import checks the model (``onnx.checker``), runs ONNX shape inference, and gives every value a static
TensorType; 4-D activations of conv nets get the NCHW layout tag. Ops follow ONNX opset 17 semantics:
a model of another opset is converted to 17 first (``onnx.version_converter``).

Ops that exist only in infopt (fused ops registered by later layers) are exported in the "infopt"
domain unless a layer registers an exporter for them in ``ONNX_EXPORTERS`` (for example one that
decomposes a fused node back into standard ONNX nodes).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .graph import Graph, GraphError, Node
from .ops import OPS, UnsupportedOpError, infer_node
from .types import TensorType, dtype_name

OPSET = 17
INFOPT_DOMAIN = "infopt"
_ONNX_DOMAINS = ("", "ai.onnx")
_LAYOUT_KEY = "infopt.layouts"  # metadata_props entry that keeps layout tags through a round trip
_CONV_OPS = {"Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "BatchNormalization", "ConvTranspose"}

# op name -> fn(node, graph) returning the ONNX NodeProtos that stand for the node.
OnnxExporter = Callable[[Node, Graph], list]
ONNX_EXPORTERS: dict[str, OnnxExporter] = {}


class OnnxImportError(ValueError):
    """A model that cannot become a Graph: unreadable, failing the checker, or without static shapes."""


def register_onnx_exporter(op: str, fn: OnnxExporter) -> None:
    """Make ``to_onnx`` export nodes of ``op`` with ``fn(node, graph) -> list[onnx.NodeProto]``."""
    ONNX_EXPORTERS[op] = fn


# ----- import -------------------------------------------------------------------------------------
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
        try:
            return onnx.load(str(path))
        except (DecodeError, RuntimeError, ValueError, OSError) as e:
            raise OnnxImportError(
                f"{where} is not a readable ONNX model (protobuf parse failed: {e}); "
                "check that the file is a complete .onnx ModelProto (not truncated, not another format)"
            ) from None
    if isinstance(model, (bytes, bytearray)):
        try:
            return onnx.load_from_string(bytes(model))
        except (DecodeError, RuntimeError, ValueError) as e:
            raise OnnxImportError(f"{where} is not a serialized ONNX ModelProto ({e})") from None
    raise TypeError(f"from_onnx takes an onnx.ModelProto, a path or bytes, got {type(model).__name__}")


def _default_opset(m) -> int:
    for imp in m.opset_import:
        if imp.domain in _ONNX_DOMAINS:
            return int(imp.version)
    return OPSET


def _check_ops(m, where: str) -> None:
    """Every node's op must be in the registry; the error names the op, the node and the opset."""
    opset = _default_opset(m)
    for i, n in enumerate(m.graph.node):
        domain_ok = n.domain in _ONNX_DOMAINS or n.domain == INFOPT_DOMAIN
        if not domain_ok or n.op_type not in OPS:
            dom = f" in domain {n.domain!r}" if n.domain else ""
            raise UnsupportedOpError(
                f"{where}: op {n.op_type!r}{dom} (node {n.name or '#' + str(i)}, opset {opset}) is not supported "
                f"by the infopt IR. Supported ops: {', '.join(sorted(OPS))}. Re-export the model without it, "
                "or register the op with infopt.ir.register_op(OpDef(...))."
            )


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


def _tensor_type(vi, what: str, hint: str) -> TensorType:
    """The static TensorType of an ONNX ValueInfo, or an error naming the value."""
    import onnx

    tt = vi.type.tensor_type
    if not vi.type.HasField("tensor_type"):
        raise OnnxImportError(f"value {what} is not a tensor (ONNX type {vi.type}); the infopt IR only has tensors")
    if not tt.HasField("shape") or any(not d.HasField("dim_value") for d in tt.shape.dim):
        dims = [d.dim_param or "?" for d in tt.shape.dim] if tt.HasField("shape") else "unknown rank"
        raise OnnxImportError(
            f"value {what} has no static shape (dims: {dims}). The infopt IR needs every shape known: "
            f"{hint}pass from_onnx(..., input_shapes={{'<input>': (n, c, ...)}}) or export with fixed input shapes."
        )
    try:
        dt = dtype_name(onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type))
    except (TypeError, KeyError, ValueError):
        raise OnnxImportError(
            f"value {what} has ONNX element type {onnx.TensorProto.DataType.Name(tt.elem_type)}, "
            "which the infopt IR does not support; cast it in the model first"
        ) from None
    return TensorType(tuple(d.dim_value for d in tt.shape.dim), dt)


def _attr_value(a, where: str) -> Any:
    """An ONNX attribute as a plain Python value: numbers, str, lists, numpy arrays for tensors."""
    from onnx import AttributeProto, helper, numpy_helper

    v = helper.get_attribute_value(a)
    if a.type == AttributeProto.TENSOR:
        return numpy_helper.to_array(v)
    if a.type == AttributeProto.TENSORS:
        return [numpy_helper.to_array(t) for t in v]
    if a.type == AttributeProto.STRING:
        return v.decode("utf-8")
    if a.type == AttributeProto.STRINGS:
        return [s.decode("utf-8") for s in v]
    if a.type in (AttributeProto.INTS, AttributeProto.FLOATS):
        return list(v)
    if a.type in (AttributeProto.INT, AttributeProto.FLOAT):
        return v
    raise OnnxImportError(f"{where}: attribute {a.name!r} of type {AttributeProto.AttributeType.Name(a.type)} "
                          "(subgraphs, sparse tensors) is not supported by the infopt IR")


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


def from_onnx(
    model: Any,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    name: str | None = None,
) -> Graph:
    """Import an ONNX model (ModelProto, path or bytes) as a typed Graph, after checker and shape inference.

    ``input_shapes`` fixes dynamic input dimensions ({"input": (1, 3, 224, 224)}) before inference.
    Errors: OnnxImportError (unreadable / checker failure / no static shape), UnsupportedOpError.
    """
    import onnx
    from onnx import numpy_helper

    where = f"ONNX file {model}" if isinstance(model, (str, os.PathLike)) else "ONNX model"
    m = _load(model, where)  # a private copy: edited in place below
    try:
        inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    except Exception as e:
        raise OnnxImportError(f"{where}: an initializer cannot be read as an array ({e})") from None
    _strip_large_initializers(m)
    try:
        onnx.checker.check_model(m)
    except onnx.checker.ValidationError as e:
        raise OnnxImportError(f"{where} fails onnx.checker: {str(e).strip().splitlines()[0]}") from None
    _check_ops(m, where)
    opset = _default_opset(m)
    if opset != OPSET:
        try:
            m = onnx.version_converter.convert_version(m, OPSET)
        except Exception as e:  # the converter raises bare RuntimeErrors
            raise OnnxImportError(
                f"{where} uses opset {opset}; converting it to opset {OPSET} (the IR's) failed: {e}. "
                f"Re-export the model with opset_version={OPSET}."
            ) from None
    if input_shapes:
        _fix_input_shapes(m, input_shapes, where)
        del m.graph.value_info[:]  # inferred again below from the new input shapes
    try:
        m = onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True, data_prop=True)
    except Exception as e:  # InferenceError and friends
        raise OnnxImportError(f"{where}: ONNX shape inference failed: {str(e).strip()}") from None

    g = m.graph
    infos = {vi.name: vi for vi in [*g.input, *g.value_info, *g.output]}
    hint = "the graph inputs have dynamic dimensions; " if any(
        any(not d.HasField("dim_value") for d in i.type.tensor_type.shape.dim) for i in g.input
    ) else ""

    graph = Graph(name or g.name or "graph")
    for arr_name, arr in inits.items():
        graph.add_initializer(arr_name, arr)
    conv_net = any(n.op_type in _CONV_OPS for n in g.node)
    layouts = json.loads(next((p.value for p in m.metadata_props if p.key == _LAYOUT_KEY), "null"))
    for vi in g.input:
        if vi.name in inits:  # old exporters list initializers as inputs too
            continue
        t = _tensor_type(vi, f"{vi.name!r} (graph input)", hint)
        if layouts is None and conv_net and t.rank == 4:
            t = TensorType(t.shape, t.dtype, "NCHW")
        graph.add_input(vi.name, t)

    used_names: set[str] = set()
    for i, n in enumerate(g.node):
        node_name = n.name or f"{n.op_type}_{i}"
        while node_name in used_names:
            node_name = f"{node_name}_{i}"
        used_names.add(node_name)
        attrs = {a.name: _attr_value(a, f"node {node_name} ({n.op_type})") for a in n.attribute}
        node = Node(n.op_type, list(n.input), list(n.output), attrs, node_name)
        graph.nodes.append(node)

    # Types: ONNX's inference is authoritative for shapes and dtypes; the registry adds layout tags
    # and must agree with ONNX (a disagreement is a bug in an op's infer function, reported here).
    producers = {o: nd for nd in graph.nodes for o in nd.outputs}
    for node in graph.toposort():
        theirs: list[TensorType | None] = []
        for out in node.outputs:
            if not out:
                theirs.append(None)
                continue
            what = f"{out!r} (output of node {node.name}, {node.op})"
            if out not in infos:
                raise OnnxImportError(
                    f"value {what} has no static shape after ONNX shape inference. {hint}Fix the input shapes "
                    "(from_onnx(..., input_shapes=...)) or export the model with static shapes."
                )
            theirs.append(_tensor_type(infos[out], what, hint))
        try:
            ours = infer_node(graph, node)
        except GraphError as e:
            raise OnnxImportError(f"{where}: infopt shape inference failed: {e}") from None
        for out, mine, t in zip(node.outputs, ours, theirs):
            if t is None:
                continue
            if (t.shape, t.dtype) != (mine.shape, mine.dtype):
                raise GraphError(
                    f"node {node.name} ({node.op}): infopt infers {mine} for %{out} but ONNX infers {t}; "
                    "the op's infer function in infopt.ir.ops disagrees with ONNX"
                )
            layout = mine.layout if layouts is None else layouts.get(out)
            graph.types[out] = TensorType(t.shape, t.dtype, layout)
    if layouts is not None:
        for v in graph.inputs:
            graph.types[v] = TensorType(graph.types[v].shape, graph.types[v].dtype, layouts.get(v))

    for vi in g.output:
        if vi.name not in producers and vi.name not in graph.inputs and vi.name not in inits:
            raise OnnxImportError(f"{where}: graph output {vi.name!r} is not defined by any node, input or initializer")
        graph.outputs.append(vi.name)
    return graph


# ----- export -------------------------------------------------------------------------------------
def _schema_attr_type(op: str, key: str) -> int | None:
    """The attribute type the ONNX schema of ``op`` declares for ``key`` (None for non-ONNX ops)."""
    import onnx

    try:
        return int(onnx.defs.get_schema(op, OPSET).attributes[key].type)
    except (onnx.defs.SchemaError, KeyError):
        return None


def _make_attr(key: str, value: Any, want: int | None = None):
    from onnx import AttributeProto, helper, numpy_helper

    if want == AttributeProto.FLOAT and isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = float(value)  # Gemm(alpha=1) written by hand: ONNX wants a float
    if want == AttributeProto.FLOATS and isinstance(value, (list, tuple)):
        value = [float(v) for v in value]
    if want == AttributeProto.INTS and isinstance(value, (list, tuple)) and not value:
        return helper.make_attribute(key, [], attr_type=AttributeProto.INTS)
    if want == AttributeProto.FLOATS and isinstance(value, (list, tuple)) and not value:
        return helper.make_attribute(key, [], attr_type=AttributeProto.FLOATS)
    if isinstance(value, np.ndarray):
        return helper.make_attribute(key, numpy_helper.from_array(value))
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, (list, tuple)):
        if not value:
            return helper.make_attribute(key, [], attr_type=AttributeProto.INTS)
        if all(isinstance(v, np.ndarray) for v in value):
            return helper.make_attribute(key, [numpy_helper.from_array(v) for v in value])
        value = [v.item() if isinstance(v, np.generic) else v for v in value]
    return helper.make_attribute(key, value)


def _value_info(name: str, t: TensorType):
    from onnx import helper

    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(t.numpy_dtype), list(t.shape))


def _export_node(node: Node, graph: Graph) -> list:
    import onnx
    from onnx import helper

    if node.op in ONNX_EXPORTERS:
        return list(ONNX_EXPORTERS[node.op](node, graph))
    domain = "" if onnx.defs.has(node.op) else INFOPT_DOMAIN
    proto = helper.make_node(node.op, node.inputs, node.outputs, name=node.name, domain=domain)
    for k, v in node.attrs.items():
        try:
            proto.attribute.append(_make_attr(k, v, _schema_attr_type(node.op, k) if domain == "" else None))
        except (TypeError, ValueError) as e:
            raise GraphError(f"node {node.label}: attribute {k}={v!r} cannot be written to ONNX ({e})") from None
    return [proto]


def sync_opset_imports(model: Any) -> Any:
    """Make ``model.opset_import`` name exactly the domains its nodes use (plus the default domain).

    The default domain keeps its version (OPSET if absent); any other domain is imported at version 1 unless the
    model already imports it. Call it after rewriting node domains (e.g. for onnxruntime's contrib ops)."""
    from onnx import helper

    have = {o.domain: o.version for o in model.opset_import}
    used = sorted({n.domain for n in model.graph.node} - {"", "ai.onnx"})
    del model.opset_import[:]
    model.opset_import.append(helper.make_opsetid("", have.get("", have.get("ai.onnx", OPSET))))
    model.opset_import.extend(helper.make_opsetid(d, have.get(d, 1)) for d in used)
    return model


def to_onnx(graph: Graph, opset: int = OPSET, check: bool = True):
    """Export a Graph as an ONNX ModelProto (checked with ``onnx.checker.check_model(full_check=True)``).

    Layout tags travel in the model's metadata so ``from_onnx(to_onnx(g))`` gives back ``g`` (float
    attributes are 32-bit in ONNX, so a Python float attribute comes back rounded to float32).
    """
    import onnx
    from onnx import helper, numpy_helper

    for v in [*graph.inputs, *graph.outputs]:
        graph.type_of(v)  # a clear GraphError if a boundary value is untyped
    nodes = [p for n in graph.toposort() for p in _export_node(n, graph)]
    boundary = set(graph.inputs) | set(graph.outputs) | set(graph.initializers)
    value_info = [
        _value_info(v, graph.types[v])
        for n in graph.nodes for v in n.outputs
        if v and v not in boundary and v in graph.types
    ]
    big = [k for k, a in graph.initializers.items() if np.asarray(a).size > 1024]
    g = helper.make_graph(
        nodes, graph.name,
        [_value_info(v, graph.types[v]) for v in graph.inputs] + [_value_info(k, graph.types[k]) for k in big],
        [_value_info(v, graph.types[v]) for v in graph.outputs],
        initializer=[numpy_helper.from_array(np.asarray(a), k) for k, a in graph.initializers.items() if k not in big],
        value_info=value_info,
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="infopt")
    sync_opset_imports(model)
    layouts = {k: t.layout for k, t in graph.types.items() if t.layout and k not in graph.initializers}
    helper.set_model_props(model, {_LAYOUT_KEY: json.dumps(layouts, sort_keys=True)})
    if opset != OPSET:
        model = onnx.version_converter.convert_version(model, opset)
    if check:  # checked without the large weights (the checker serializes the model; their types are declared)
        try:
            onnx.checker.check_model(model, full_check=True)
        except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as e:
            raise GraphError(f"graph {graph.name!r} exports to an invalid ONNX model: {e}") from None
    inputs = [vi for vi in model.graph.input if vi.name not in set(big)]
    del model.graph.input[:]
    model.graph.input.extend(inputs)
    del model.graph.initializer[:]  # all weights, in the graph's order
    model.graph.initializer.extend(numpy_helper.from_array(np.asarray(a), k) for k, a in graph.initializers.items())
    return model
