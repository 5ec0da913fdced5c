"""Getting optimized graphs back out: expand fused ops into standard ONNX ops, or export them as the
onnxruntime contrib ops that run them as one kernel (``com.microsoft.FusedConv``)."""
from __future__ import annotations

from typing import Any

from ..ir.graph import Graph, Node
from ..ir.ops.fused import conv_attrs, decode_program

ORT_DOMAIN = "com.microsoft"
TARGETS = ("onnx", "ort")


def _expand_node(graph: Graph, node: Node, keep_fused_conv: bool) -> list[Node]:
    """The standard nodes that compute ``node`` (the node itself when nothing needs expanding)."""
    if node.op == "FusedElementwise":
        steps = decode_program(node.attrs)
        names: dict[str, str] = {f"i{k}": v for k, v in enumerate(node.inputs)}
        out: list[Node] = []
        for k, step in enumerate(steps):
            last = k == len(steps) - 1
            res = node.outputs[0] if last else graph.fresh_name(f"{node.name}_t{k}")
            names[f"t{k}"] = res
            out.append(Node(step["op"], [names[a] for a in step["args"]], [res], step.get("attrs", {}),
                            graph.fresh_name(step["op"])))
        return out
    if node.op == "FusedConv" and not keep_fused_conv:
        x, w = node.inputs[:2]
        b = node.inputs[2] if len(node.inputs) > 2 else ""
        z = node.inputs[3] if len(node.inputs) > 3 else ""
        act = node.attrs.get("activation", "")
        res = node.outputs[0]
        stages = [("Conv", [x, w] + ([b] if b else []), conv_attrs(node.attrs))]
        if z:
            stages.append(("Add", [None, z], {}))
        if act:
            stages.append((act, [None], {}))
        out, prev = [], None
        for k, (op, ins, attrs) in enumerate(stages):
            name = res if k == len(stages) - 1 else graph.fresh_name(f"{node.name}_{op.lower()}")
            out.append(Node(op, [prev if i is None else i for i in ins], [name], attrs, graph.fresh_name(op)))
            prev = name
        return out
    if node.op == "ConvNHWC":
        from .layout import expand_conv_nhwc

        return expand_conv_nhwc(graph, node)
    return [node]


def expand_fused(graph: Graph, keep_fused_conv: bool = False) -> Graph:
    """A copy of ``graph`` with FusedElementwise, ConvNHWC (and FusedConv unless kept) written as standard ops."""
    from ..ir.ops import infer_shapes

    g = graph.copy()
    nodes: list[Node] = []
    for n in g.nodes:
        nodes.extend(_expand_node(g, n, keep_fused_conv))
    g.nodes = nodes
    return infer_shapes(g)


def export_optimized(graph: Graph, target: str = "ort", check: bool = True) -> Any:
    """Export an optimized graph as an ONNX ModelProto.

    ``target="ort"`` keeps FusedConv nodes as onnxruntime's ``com.microsoft.FusedConv`` (one kernel each) and
    NCHWc nodes as its ``com.microsoft.nchwc`` ops; ``target="onnx"`` writes only standard ONNX ops. FusedElementwise nodes are expanded in both.
    """
    import onnx

    from ..ir.onnx_io import sync_opset_imports, to_onnx

    if target not in TARGETS:
        raise ValueError(f"target must be one of {TARGETS}, got {target!r}")
    g = expand_fused(graph, keep_fused_conv=target == "ort")
    model = to_onnx(g, check=False)
    if target == "ort":
        from .nchwc import to_ort_nchwc

        to_ort_nchwc(model)
    for n in model.graph.node:
        if n.op_type == "FusedConv":
            n.domain = ORT_DOMAIN
    bad = sorted({n.op_type for n in model.graph.node if n.domain == "infopt"})
    if bad:
        raise ValueError(f"ops {bad} have no ONNX form; expand or remove them before exporting")
    sync_opset_imports(model)
    if check:  # the full check runs shape inference, which knows no contrib-domain ops
        onnx.checker.check_model(model, full_check=all(o.domain in ("", "ai.onnx") for o in model.opset_import))
    return model
