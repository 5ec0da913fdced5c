"""Operator fusion: Conv(+BN)(+Add)+ReLU into one FusedConv, and chains of elementwise ops into one kernel.

Fusion saves a kernel launch and a round trip of the intermediate tensor through memory per fused op.
Legality: a node is fused into its consumer only if every reader of its output is inside the fused group
and the output is not a graph output; otherwise the value must still be materialized. With
``recompute=True`` the elementwise fusion copies such a producer into the group instead (the original
stays for its other readers): more arithmetic, less memory traffic.
"""
from __future__ import annotations

from typing import Any

from ..ir.graph import Graph, Node
from ..ir.ops import OPS
from .base import Pass
from .bn_fold import fold_batchnorm
from ..ir.ops.fused import ACTIVATIONS, encode_step
from .rewrite import single_consumer


class ConvFusion(Pass):
    """Fuse Conv -> [BatchNormalization] -> [Add(residual)] -> Relu into one FusedConv node.

    The BN is folded into the weights (see bn_fold); the residual Add becomes FusedConv's Z input when
    ``fuse_add`` (onnxruntime's FusedConv has the same input); the activation becomes its attribute.
    """

    name = "conv_fusion"

    def __init__(self, fuse_add: bool = True, activations: tuple[str, ...] = ("Relu",)) -> None:
        bad = [a for a in activations if a not in ACTIVATIONS]
        if bad:
            raise ValueError(f"activations {bad} cannot be fused; FusedConv supports {ACTIVATIONS[1:]}")
        self.fuse_add = fuse_add
        self.activations = activations

    def apply(self, graph: Graph) -> dict[str, Any]:
        stats = {"bn_folded": 0, "add_fused": 0, "act_fused": 0}
        for conv in [n for n in graph.nodes if n.op == "Conv"]:
            conv_out = conv.outputs[0]
            nxt = single_consumer(graph, conv_out)
            if nxt is not None and nxt.op == "BatchNormalization" and fold_batchnorm(graph, nxt, conv):
                stats["bn_folded"] += 1
                conv_out = conv.outputs[0]
                nxt = single_consumer(graph, conv_out)
            z = None
            if (self.fuse_add and nxt is not None and nxt.op == "Add" and len(conv.inputs) <= 3
                    and len(nxt.inputs) == 2 and conv_out in nxt.inputs):
                other = nxt.inputs[1] if nxt.inputs[0] == conv_out else nxt.inputs[0]
                after = single_consumer(graph, nxt.outputs[0])
                t_other, t_out = graph.types.get(other), graph.types.get(conv_out)
                # only fuse the Add together with a following activation (as onnxruntime's FusedConv does)
                if (other != conv_out and t_other is not None and t_out is not None and t_other.shape == t_out.shape
                        and after is not None and after.op in self.activations):
                    z = other
            act_node = nxt if nxt is not None and nxt.op in self.activations else None
            if z is not None:
                add = nxt
                act_node = single_consumer(graph, add.outputs[0])
                inputs = list(conv.inputs) + [""] * (3 - len(conv.inputs)) + [z]
                graph.remove_nodes([add])
                stats["add_fused"] += 1
            else:
                inputs = list(conv.inputs)
            if act_node is None:
                if z is not None:  # pragma: no cover - guarded above
                    raise AssertionError("residual fused without activation")
                continue
            conv.op = "FusedConv"
            conv.inputs = inputs
            conv.attrs["activation"] = act_node.op
            out = act_node.outputs[0]
            t_out = graph.type_of(out)
            graph.remove_nodes([act_node])
            graph.types.pop(conv.outputs[0], None)
            conv.outputs = [out]
            graph.types[out] = t_out
            stats["act_fused"] += 1
        graph.prune_initializers()
        if not any(stats.values()):
            return {"reason": "no Conv followed by BatchNormalization/Add/activation with a single reader"}
        return stats


def _fusable(node: Node) -> bool:
    opdef = OPS.get(node.op)
    return (opdef is not None and opdef.elementwise and node.op != "FusedElementwise"
            and len(node.outputs) == 1 and all(i for i in node.inputs))


def _replaced(graph: Graph, root: Node, members: list[Node], consumers: dict[str, list[Node]]) -> set[int]:
    """Members the fused node makes redundant: the root, and members all of whose readers are redundant."""
    dead = {id(root)}
    grew = True
    while grew:
        grew = False
        for m in members:
            if id(m) in dead or m.outputs[0] in graph.outputs:
                continue
            if all(id(r) in dead for r in consumers.get(m.outputs[0], [])):
                dead.add(id(m))
                grew = True
    return dead


class ElementwiseFusion(Pass):
    """Fuse producer-consumer chains (and trees) of elementwise ops into FusedElementwise nodes.

    A producer joins its consumer's group when all its readers are in the group and its output is no graph
    output (or, with ``recompute=True``, by copying it: the original stays for the other readers).
    ``max_ops`` bounds a group's size.
    """

    name = "elementwise_fusion"

    def __init__(self, recompute: bool = False, max_ops: int = 16) -> None:
        self.recompute = recompute
        self.max_ops = max_ops

    def apply(self, graph: Graph) -> dict[str, Any]:
        producers = graph.producers()
        consumers = graph.consumers()
        order = graph.toposort()
        position = {id(n): k for k, n in enumerate(order)}
        grouped: set[int] = set()
        groups: list[tuple[Node, list[Node]]] = []
        refused = 0
        for root in reversed(order):
            if id(root) in grouped or not _fusable(root):
                continue
            members = [root]
            ids = {id(root)}
            refused_ids: set[int] = set()
            grew = True
            while grew and len(members) < self.max_ops:
                grew = False
                for m in list(members):
                    for i in m.inputs:
                        p = producers.get(i)
                        if p is None or id(p) in ids or id(p) in grouped or not _fusable(p):
                            continue
                        readers = consumers.get(p.outputs[0], [])
                        private = all(id(r) in ids for r in readers) and p.outputs[0] not in graph.outputs
                        if not private and not self.recompute:
                            refused_ids.add(id(p))
                            continue
                        members.append(p)
                        ids.add(id(p))
                        grew = True
                        if len(members) >= self.max_ops:
                            break
                    if len(members) >= self.max_ops:
                        break
            refused += len(refused_ids - ids)
            if len(members) < 2:
                continue
            members.sort(key=lambda n: position[id(n)])
            groups.append((root, members))
            grouped |= _replaced(graph, root, members, consumers)
        if not groups:
            return {"reason": "no fusable elementwise producer-consumer pair"
                    + (f" ({refused} refused: the intermediate has other readers)" if refused else "")}
        dead: set[int] = set()
        new_nodes: dict[int, Node] = {}
        for root, members in groups:
            ids = {id(m) for m in members}
            local = {m.outputs[0]: f"t{k}" for k, m in enumerate(members)}
            ext: list[str] = []
            steps = []
            for m in members:
                args = []
                for i in m.inputs:
                    if i in local and producers.get(i) is not None and id(producers[i]) in ids:
                        args.append(local[i])
                    else:
                        if i not in ext:
                            ext.append(i)
                        args.append(f"i{ext.index(i)}")
                steps.append(encode_step(m.op, args, dict(m.attrs)))
            fused = Node("FusedElementwise", ext, list(root.outputs), {"program": steps},
                         graph.fresh_name("FusedElementwise"))
            new_nodes[id(root)] = fused
            dead |= _replaced(graph, root, members, consumers)
        nodes = []
        for n in graph.nodes:
            if id(n) in new_nodes:
                nodes.append(new_nodes[id(n)])
            elif id(n) not in dead:
                nodes.append(n)
        removed = [n for n in graph.nodes if id(n) in dead and id(n) not in new_nodes]
        graph.nodes = nodes
        for n in removed:
            graph.types.pop(n.outputs[0], None)
        fused_ops = sum(len(m) for _, m in groups)
        return {"groups": len(groups), "ops_fused": fused_ops, "refused": refused}
