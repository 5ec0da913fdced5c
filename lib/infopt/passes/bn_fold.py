"""BatchNorm folding: in inference, BatchNormalization after a Conv or Gemm is an affine map per channel,
so it folds into that layer's weights and bias and disappears from the graph."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.graph import Graph, Node
from .base import Pass
from .rewrite import new_const, single_consumer


def bn_scale_shift(scale: np.ndarray, bias: np.ndarray, mean: np.ndarray, var: np.ndarray,
                   eps: float) -> tuple[np.ndarray, np.ndarray]:
    """BN as y = x*s + t per channel: s = scale/sqrt(var+eps), t = bias - mean*s (computed in float64)."""
    s = np.asarray(scale, np.float64) / np.sqrt(np.asarray(var, np.float64) + float(eps))
    t = np.asarray(bias, np.float64) - np.asarray(mean, np.float64) * s
    return s, t


def fold_bn_into_conv(w: np.ndarray, b: np.ndarray | None, scale: np.ndarray, bias: np.ndarray,
                      mean: np.ndarray, var: np.ndarray, eps: float = 1e-5) -> tuple[np.ndarray, np.ndarray]:
    """Conv weights [O, I/g, kh, kw] and bias [O] such that conv(x, W', b') == BN(conv(x, W, b))."""
    s, t = bn_scale_shift(scale, bias, mean, var, eps)
    b0 = np.zeros(w.shape[0]) if b is None else np.asarray(b, np.float64)
    w2 = np.asarray(w, np.float64) * s.reshape((-1,) + (1,) * (w.ndim - 1))
    return w2.astype(w.dtype), (b0 * s + t).astype(w.dtype)


def _bn_params(graph: Graph, bn: Node) -> tuple[np.ndarray, ...] | None:
    vals = [graph.initializers.get(i) for i in bn.inputs[1:5]]
    if any(v is None for v in vals) or int(bn.attrs.get("training_mode", 0)):
        return None
    return tuple(np.asarray(v) for v in vals)


def fold_batchnorm(graph: Graph, bn: Node, producer: Node) -> bool:
    """Fold ``bn`` into its producer (Conv or Gemm with constant weights), in place. Returns whether it did."""
    params = _bn_params(graph, bn)
    if params is None:
        return False
    scale, bias, mean, var = params
    eps = float(bn.attrs.get("epsilon", 1e-5))
    if producer.op in ("Conv", "FusedConv") and not producer.attrs.get("activation") and len(producer.inputs) <= 3:
        w = graph.initializers.get(producer.inputs[1])
        b_name = producer.inputs[2] if len(producer.inputs) > 2 else ""
        b = graph.initializers.get(b_name) if b_name else None
        if w is None or (b_name and b is None):
            return False
        w2, b2 = fold_bn_into_conv(w, b, scale, bias, mean, var, eps)
        producer.inputs = [producer.inputs[0], new_const(graph, "w_bn", w2), new_const(graph, "b_bn", b2)]
    elif producer.op == "Gemm":
        bmat = graph.initializers.get(producer.inputs[1])
        c_name = producer.inputs[2] if len(producer.inputs) > 2 else ""
        c = graph.initializers.get(c_name) if c_name else None
        if bmat is None or (c_name and c is None) or int(producer.attrs.get("transA", 0)) not in (0, 1):
            return False
        s, t = bn_scale_shift(scale, bias, mean, var, eps)
        trans_b = int(producer.attrs.get("transB", 0))
        b64 = np.asarray(bmat, np.float64)
        b2 = b64 * (s[:, None] if trans_b else s[None, :])
        beta = float(producer.attrs.get("beta", 1.0))
        c64 = np.zeros(s.shape) if c is None else beta * np.asarray(c, np.float64)
        c2 = (c64 * s + t)
        dt = bmat.dtype
        producer.inputs = [producer.inputs[0], new_const(graph, "w_bn", b2.astype(dt)), new_const(graph, "c_bn", c2.astype(dt))]
        producer.attrs["beta"] = 1.0
    else:
        return False
    out = bn.outputs[0]
    mid = producer.outputs[0]
    t_out = graph.type_of(out)
    graph.remove_nodes([bn])
    producer.outputs = [out]
    graph.types.pop(mid, None)
    graph.types[out] = t_out
    return True


class BatchNormFolding(Pass):
    """Fold every inference BatchNormalization that directly follows a Conv or Gemm with constant weights.

    Only when the Conv/Gemm output feeds the BN alone (otherwise the unnormalized value is still needed);
    BN nodes that cannot be folded stay and are counted in the statistics.
    """

    name = "bn_folding"

    def apply(self, graph: Graph) -> dict[str, Any]:
        producers = graph.producers()
        consumers = graph.consumers()
        folded = kept = 0
        for bn in [n for n in graph.nodes if n.op == "BatchNormalization"]:
            prod = producers.get(bn.inputs[0])
            if (prod is not None and single_consumer(graph, bn.inputs[0], consumers) is bn
                    and len(bn.outputs) == 1 and fold_batchnorm(graph, bn, prod)):
                folded += 1
            else:
                kept += 1
        graph.prune_initializers()
        if not folded:
            return {"reason": f"no foldable BatchNormalization ({kept} not after a Conv/Gemm with constant weights)"}
        return {"folded": folded, "kept": kept}
