"""Layout transformation: run convolutions in NHWC (channels last), then cancel the transposes this creates.

``ToNHWC`` rewrites each 2-D Conv/FusedConv as Transpose(NCHW->NHWC) -> ConvNHWC -> Transpose(NHWC->NCHW),
which is correct but adds two transposes per conv. ``TransposeSinking`` then pushes transposes through
elementwise ops (a Relu or Add commutes with any permutation of its inputs' axes) so that inverse pairs
meet, and the simplifier removes them: the graph converts layout once at its entry and once at its exit.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.graph import Graph, Node
from ..ir.ops import OPS, get_op
from ..ir.ops.fused import FUSED_ATTRS
from ..ir.ops.layouts import TO_NCHW, TO_NHWC
from .base import Pass
from .simplify import AlgebraicSimplification


def expand_conv_nhwc(graph: Graph, node: Node) -> list[Node]:
    """ConvNHWC as standard ONNX: Transpose -> Conv/FusedConv -> Transpose (for export)."""
    x = graph.fresh_name(f"{node.name}_nchw")
    ins = [x, *node.inputs[1:3]]
    nodes = [Node("Transpose", [node.inputs[0]], [x], {"perm": TO_NCHW}, graph.fresh_name("Transpose"))]
    if len(node.inputs) > 3 and node.inputs[3]:
        z = graph.fresh_name(f"{node.name}_z_nchw")
        nodes.append(Node("Transpose", [node.inputs[3]], [z], {"perm": TO_NCHW}, graph.fresh_name("Transpose")))
        ins.append(z)
    y = graph.fresh_name(f"{node.name}_y_nchw")
    fused = any(k in node.attrs for k in FUSED_ATTRS) or len(ins) > 3
    nodes.append(Node("FusedConv" if fused else "Conv", ins, [y], dict(node.attrs), graph.fresh_name("Conv")))
    nodes.append(Node("Transpose", [y], list(node.outputs), {"perm": TO_NHWC}, graph.fresh_name("Transpose")))
    return nodes


class ToNHWC(Pass):
    """Rewrite 2-D Conv and FusedConv nodes to ConvNHWC between a pair of layout transposes."""

    name = "to_nhwc"

    def apply(self, graph: Graph) -> dict[str, Any]:
        nodes: list[Node] = []
        converted = 0
        for n in graph.nodes:
            if n.op not in ("Conv", "FusedConv") or graph.type_of(n.inputs[0]).rank != 4:
                nodes.append(n)
                continue
            xt = graph.fresh_name("x_nhwc")
            nodes.append(Node("Transpose", [n.inputs[0]], [xt], {"perm": TO_NHWC}, graph.fresh_name("Transpose")))
            ins = [xt, *n.inputs[1:3]]
            if len(n.inputs) > 3 and n.inputs[3]:
                zt = graph.fresh_name("z_nhwc")
                nodes.append(Node("Transpose", [n.inputs[3]], [zt], {"perm": TO_NHWC}, graph.fresh_name("Transpose")))
                ins += [""] * (3 - len(ins)) + [zt]
            yt = graph.fresh_name("y_nhwc")
            nodes.append(Node("ConvNHWC", ins, [yt], dict(n.attrs), graph.fresh_name("ConvNHWC")))
            nodes.append(Node("Transpose", [yt], list(n.outputs), {"perm": TO_NCHW}, graph.fresh_name("Transpose")))
            converted += 1
        if not converted:
            return {"reason": "no 4-D Conv to convert"}
        graph.nodes = nodes
        _retype(graph)
        return {"convs": converted, "transposes_added": sum(n.op == "Transpose" for n in nodes)}


def _retype(graph: Graph) -> None:
    from ..ir.ops import infer_shapes

    infer_shapes(graph)


def _is_perm(node: Node | None) -> bool:
    return node is not None and node.op == "Transpose" and bool(node.attrs.get("perm"))


class TransposeSinking(Pass):
    """Move transposes below elementwise ops so inverse pairs meet, then cancel them.

    ``op(Transpose(a, p))`` becomes ``Transpose(op(a), p)`` for unary elementwise ops, and
    ``op(Transpose(a, p), Transpose(b, p))`` becomes ``Transpose(op(a, b), p)`` for binary ones (also when
    the other operand is a scalar constant). Only transposes whose output has that single reader move.
    """

    name = "transpose_sinking"

    def apply(self, graph: Graph) -> dict[str, Any]:
        from .cse import CommonSubexpressionElimination
        from .dce import DeadCodeElimination

        before = sum(n.op == "Transpose" for n in graph.nodes)
        moved = 0
        for _ in range(4 * len(graph.nodes) + 1):
            # equal transposes of one value merge (CSE), inverse pairs cancel (simplify), leftovers go (DCE)
            CommonSubexpressionElimination(dedupe_constants=False).apply(graph)
            AlgebraicSimplification().apply(graph)
            DeadCodeElimination().apply(graph)
            if not self._sink_one(graph):
                break
            moved += 1
        after = sum(n.op == "Transpose" for n in graph.nodes)
        if not moved and after == before:
            return {"reason": "no transpose can move past an elementwise op or cancel"}
        return {"moved": moved, "transposes_before": before, "transposes_after": after}

    def _sink_one(self, graph: Graph) -> bool:
        producers = graph.producers()
        consumers = graph.consumers()
        for node in graph.toposort():
            opdef = OPS.get(node.op)
            if opdef is None or not opdef.elementwise or len(node.outputs) != 1 or node.op == "FusedElementwise":
                continue
            ts = [producers.get(i) for i in node.inputs]
            perms = {tuple(t.attrs["perm"]) for t in ts if _is_perm(t)}
            if len(perms) != 1:
                continue
            (perm,) = perms
            ok = True
            new_inputs = []
            for i, t in zip(node.inputs, ts):
                if _is_perm(t):
                    if len(consumers.get(i, [])) != 1 or i in graph.outputs:
                        ok = False
                        break
                    new_inputs.append(t.inputs[0])
                elif i in graph.initializers and np.asarray(graph.initializers[i]).size == 1:
                    new_inputs.append(i)
                else:
                    ok = False
                    break
            if not ok:
                continue
            out = node.outputs[0]
            mid = graph.fresh_name(f"{node.op.lower()}_pre")
            node.inputs = new_inputs
            node.outputs = [mid]
            graph.types.pop(out, None)
            graph.types[mid] = get_op(node.op).infer([graph.type_of(i) for i in new_inputs], node.attrs)[0]
            tnode = Node("Transpose", [mid], [out], {"perm": list(perm)}, graph.fresh_name("Transpose"))
            graph.nodes.insert(graph.nodes.index(node) + 1, tnode)
            from ..ir.ops import infer_node

            graph.types[out] = infer_node(graph, tnode)[0]
            graph.remove_nodes([t for t in ts if _is_perm(t) and not any(o in (n.inputs) for n in graph.nodes
                                                                         for o in t.outputs)])
            return True
        return False
