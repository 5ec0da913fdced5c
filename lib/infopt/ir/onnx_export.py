"""ONNX export: ``to_onnx`` (Graph -> ModelProto) at the graph's own opset or one asked for.

Each node is written in the form its op has at the target opset: the op's ``export`` fact rewrites it where
that form differs (axes as input or attribute, Gelu before opset 20 as its formula, Split's num_outputs...),
and an attribute the target opset does not know is dropped when it holds the default of the opset that added
it (``noop_with_empty_axes=0``), else the export fails naming the node, the attribute and the opset it needs.
Ops that exist only in infopt (FusedConv...) are written in the "infopt" domain, so a round trip keeps them;
``infopt.passes.export`` writes them as standard ops. onnx's checker (full check) accepts every result.

Layout tags travel in the model's metadata, so ``from_onnx(to_onnx(g))`` gives back ``g`` (float attributes
are 32-bit in ONNX: a Python float attribute comes back rounded to float32).
"""
from __future__ import annotations

import functools
import json
from typing import Any

import numpy as np

from .errors import GraphError
from .graph import Graph
from .node import Node
from .onnx_import import LAYOUT_KEY, ONNX_DOMAINS
from .ops import OPS
from .ops.registry import INFOPT_DOMAIN
from .opset import check_opset
from .types import TensorType


@functools.lru_cache(maxsize=4096)
def _schema(op: str, opset: int):
    """onnx's schema of ``op`` as of ``opset`` (None if the op does not exist yet at that opset)."""
    import onnx

    try:
        return onnx.defs.get_schema(op, opset, "")
    except onnx.defs.SchemaError:
        return None


@functools.lru_cache(maxsize=4096)
def _attr_origin(op: str, key: str) -> tuple[int, Any]:
    """(the first opset whose schema of ``op`` has attribute ``key``, its default value there; None if none)."""
    import onnx
    from onnx import helper

    for version in range(1, onnx.defs.onnx_opset_version() + 1):
        s = _schema(op, version)
        if s is not None and key in s.attributes:
            a = s.attributes[key]
            default = helper.get_attribute_value(a.default_value) if a.default_value.name else None
            if isinstance(default, bytes):
                default = default.decode()
            return version, default
    return 0, None


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return list(a if isinstance(a, (list, tuple)) else [a]) == list(b if isinstance(b, (list, tuple)) else [b])
    return a == b or (isinstance(a, float) and isinstance(b, float) and np.float32(a) == np.float32(b))


def _fit_attrs(node: Node, opset: int) -> Node:
    """``node`` with the attributes ``opset`` does not have removed (when they hold their default), or an error."""
    schema = _schema(node.op, opset)
    extra = [k for k in node.attrs if k not in schema.attributes]
    if not extra:
        return node
    attrs = dict(node.attrs)
    for k in extra:
        since, default = _attr_origin(node.op, k)
        if since and since > opset and default is not None and _same(attrs[k], default):
            del attrs[k]
            continue
        need = f"it exists from opset {since}; export at opset >= {since}" if since > opset else \
            "ONNX's schema has no such attribute; remove it"
        raise GraphError(f"node {node.label}: {node.op} attribute {k}={attrs[k]!r} cannot be written at opset "
                         f"{opset} ({need})")
    return Node(node.op, node.inputs, node.outputs, attrs, node.name)


def onnx_nodes(node: Node, graph: Graph, opset: int, _depth: int = 0) -> list[Node]:
    """The nodes that write ``node`` at ``opset``: its op's export fact, then attributes fitted to the schema."""
    opdef = OPS.get(node.op)
    if opdef is None or (opdef.domain and opdef.export is None):
        return [node]  # an infopt-domain op (or one outside the registry): written as it is
    nodes = opdef.export(node, graph, opset) if opdef.export is not None else [node]
    out = []
    for n in nodes:
        if n.op != node.op and _depth < 4:
            out.extend(onnx_nodes(n, graph, opset, _depth + 1))
            continue
        if n.op in OPS and OPS[n.op].domain:
            out.append(n)
            continue
        if _schema(n.op, opset) is None:
            since = next((v for v in range(opset + 1, 64) if _schema(n.op, v) is not None), None)
            raise GraphError(f"node {n.label}: {n.op} does not exist at opset {opset} (it exists from opset {since}) "
                             f"and infopt has no decomposition of it; export at opset >= {since}")
        out.append(_fit_attrs(n, opset))
    return out


# ----- writing protos -----------------------------------------------------------------------------
def _schema_attr_type(op: str, key: str, opset: int) -> int | None:
    """The attribute type the ONNX schema of ``op`` declares for ``key`` (None for non-ONNX ops)."""
    s = _schema(op, opset)
    return int(s.attributes[key].type) if s is not None and key in s.attributes else None


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
    if want == AttributeProto.STRINGS and isinstance(value, (list, tuple)) and not value:
        return helper.make_attribute(key, [], attr_type=AttributeProto.STRINGS)
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


def _node_proto(node: Node, opset: int):
    from onnx import helper

    opdef = OPS.get(node.op)
    domain = opdef.domain if opdef is not None else INFOPT_DOMAIN
    proto = helper.make_node(node.op, node.inputs, node.outputs, name=node.name, domain=domain)
    for k, v in node.attrs.items():
        try:
            proto.attribute.append(_make_attr(k, v, _schema_attr_type(node.op, k, opset) if not domain else None))
        except (TypeError, ValueError) as e:
            raise GraphError(f"node {node.label}: attribute {k}={v!r} cannot be written to ONNX ({e})") from None
    return proto


def _value_info(name: str, t: TensorType):
    from onnx import helper

    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(t.numpy_dtype), list(t.shape))


def sync_opset_imports(model: Any, opset: int | None = None) -> Any:
    """Make ``model.opset_import`` name exactly the domains its nodes use (plus the default domain).

    The default domain keeps its version (``opset`` if given, else the model's, else the IR's default); any other
    domain is imported at version 1 unless the model already imports it. Call it after rewriting node domains (e.g.
    for onnxruntime's contrib ops)."""
    from onnx import helper

    from .opset import DEFAULT_OPSET

    have = {o.domain: o.version for o in model.opset_import}
    used = sorted({n.domain for n in model.graph.node} - set(ONNX_DOMAINS))
    default = opset if opset is not None else have.get("", have.get("ai.onnx", DEFAULT_OPSET))
    del model.opset_import[:]
    model.opset_import.append(helper.make_opsetid("", default))
    model.opset_import.extend(helper.make_opsetid(d, have.get(d, 1)) for d in used)
    return model


def to_onnx(graph: Graph, opset: int | None = None, check: bool = True):
    """Export a Graph as an ONNX ModelProto at ``opset`` (default: the graph's own), checked with
    ``onnx.checker.check_model(full_check=True)``.

    Layout tags travel in the model's metadata so ``from_onnx(to_onnx(g))`` gives back ``g`` (float
    attributes are 32-bit in ONNX, so a Python float attribute comes back rounded to float32).
    """
    import onnx
    from onnx import helper, numpy_helper

    target = check_opset(graph.opset if opset is None else opset, f"to_onnx(graph {graph.name!r})")
    for v in [*graph.inputs, *graph.outputs]:
        graph.type_of(v)  # a clear GraphError if a boundary value is untyped
    nodes = [_node_proto(p, target) for n in graph.toposort() for p in onnx_nodes(n, graph, target)]
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
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", target)], producer_name="infopt")
    sync_opset_imports(model, target)
    layouts = {k: t.layout for k, t in graph.types.items() if t.layout and k not in graph.initializers}
    helper.set_model_props(model, {LAYOUT_KEY: json.dumps(layouts, sort_keys=True)})
    if check:  # checked without the large weights (the checker serializes the model; their types are declared)
        try:
            onnx.checker.check_model(model, full_check=True)
        except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as e:
            msg = " | ".join(line.strip() for line in str(e).strip().splitlines() if line.strip())
            raise GraphError(f"graph {graph.name!r} exports to an invalid ONNX model at opset {target}: {msg}") from None
    inputs = [vi for vi in model.graph.input if vi.name not in set(big)]
    del model.graph.input[:]
    model.graph.input.extend(inputs)
    del model.graph.initializer[:]  # all weights, in the graph's order
    model.graph.initializer.extend(numpy_helper.from_array(np.asarray(a), k) for k, a in graph.initializers.items())
    return model


__all__ = ["onnx_nodes", "sync_opset_imports", "to_onnx"]
