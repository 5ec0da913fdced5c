"""Parallelism counted: the bytes each rank sends per step under data, tensor, pipeline and expert parallelism.

The formulas (per rank, one step; `tokens` = tokens each rank processes in the step, `b` = bytes per element):
  - ring all-reduce of a buffer of S bytes over n ranks: each rank sends 2 (n - 1) / n * S
    (a reduce-scatter then an all-gather, n - 1 steps each, S / n per step);
  - data parallel (training only): all-reduce every gradient once per step: ring(params / (tp * pp) * b_grad, dp);
    inference replicas send nothing;
  - tensor parallel (Megatron-LM): column-parallel then row-parallel linears, so each layer needs 2 all-reduces in
    the forward pass (after attention's o_proj and after the MLP's down_proj) of tokens * hidden * b, 2 more in the
    backward: layers / pp * 2 * ring(tokens * hidden * b, tp), doubled for training;
  - pipeline parallel: each stage sends its output activations, tokens * hidden * b, to the next stage (and, in
    training, receives the same size of gradients back): one boundary per stage, pp - 1 in the pipeline;
  - expert parallel: each MoE layer sends every token to its top-k experts (all-to-all dispatch) and brings the
    results back (all-to-all combine); with uniform routing (ep - 1) / ep of them live on other ranks:
    moe_layers / pp * 2 * tokens * top_k * hidden * b * (ep - 1) / ep (shared experts run locally).
`comm_table(spec, cluster)` applies them to a model (`infopt.llm.memory.ModelSpec`) on a `Cluster` with link speeds;
`comm_figure` plots bytes per rank against the degree. `infopt.llm.parallel_run` runs tensor parallelism for real
with torch.distributed (`run_tensor_parallel`, `measure_overlap`); it imports this module, never the reverse.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .memory import MODELS, ModelSpec, dtype_bytes

__all__ = ["Cluster", "CLUSTERS", "ring_all_reduce_bytes", "all_to_all_bytes", "dp_bytes", "tp_bytes", "pp_bytes",
           "ep_bytes", "comm_table", "comm_figure"]


@dataclass(frozen=True, kw_only=True)
class Cluster:
    """GPUs and links, and how a model is split over them: tp * pp * dp GPUs (expert parallelism reuses them).

    Placement: TP groups are the innermost (consecutive GPUs), then PP, then DP; an EP group is `ep` consecutive GPUs.
    A group that fits in one node talks over `intra_node_gbs` (NVLink), otherwise over `inter_node_gbs` (the NIC)."""

    name: str
    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    gpus_per_node: int = 8
    intra_node_gbs: float = 450.0    # H100 SXM NVLink 4: 900 GB/s both directions, 450 GB/s each way
    inter_node_gbs: float = 50.0     # one 400 Gb/s InfiniBand NIC per GPU

    def __post_init__(self) -> None:
        for f in ("tp", "pp", "dp", "ep", "gpus_per_node"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"Cluster {self.name!r}: {f} must be an int >= 1, got {v!r}")
        if self.ep > self.gpus:
            raise ValueError(f"Cluster {self.name!r}: ep ({self.ep}) cannot exceed the GPUs (tp*pp*dp = {self.gpus})")
        if self.intra_node_gbs <= 0 or self.inter_node_gbs <= 0:
            raise ValueError(f"Cluster {self.name!r}: link bandwidths must be > 0 GB/s")

    @property
    def gpus(self) -> int:
        """Total GPUs: tp * pp * dp."""
        return self.tp * self.pp * self.dp

    def link_gbs(self, span: int) -> float:
        """Bandwidth of a group whose ranks span `span` consecutive GPUs."""
        return self.intra_node_gbs if span <= self.gpus_per_node else self.inter_node_gbs


CLUSTERS: dict[str, Cluster] = {c.name: c for c in [
    Cluster(name="1 node, 8 GPUs: TP 8", tp=8),
    Cluster(name="2 nodes, 16 GPUs: TP 8 x PP 2", tp=8, pp=2),
    Cluster(name="4 nodes, 32 GPUs: TP 8 x DP 4", tp=8, dp=4),
    Cluster(name="4 nodes, 32 GPUs: TP 8 x PP 4, EP 32", tp=8, pp=4, ep=32),
]}


def _check_n(n: int, what: str) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{what} must be an int >= 1, got {n!r}")


def _check_tokens(tokens: int) -> None:
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
        raise ValueError(f"tokens must be an int >= 0 (tokens each rank processes in the step), got {tokens!r}")


def ring_all_reduce_bytes(buffer_bytes: float, n: int) -> float:
    """Bytes each rank sends in a ring all-reduce of `buffer_bytes` over n ranks: 2 (n - 1) / n * buffer_bytes."""
    _check_n(n, "n (ranks)")
    if buffer_bytes < 0:
        raise ValueError(f"buffer_bytes must be >= 0, got {buffer_bytes!r}")
    return 2.0 * (n - 1) / n * buffer_bytes


def all_to_all_bytes(bytes_per_rank: float, n: int) -> float:
    """Bytes each rank sends in an all-to-all of `bytes_per_rank` spread evenly over n ranks: (n - 1) / n of them."""
    _check_n(n, "n (ranks)")
    return (n - 1) / n * bytes_per_rank


def dp_bytes(spec: ModelSpec, dp: int, grad_dtype: str = "bf16", tp: int = 1, pp: int = 1,
             training: bool = True) -> float:
    """Data parallel: ring all-reduce of this rank's gradients, params / (tp * pp) * bytes, once per training step
    (0 for inference: replicas serve their own requests)."""
    _check_n(tp, "tp")
    _check_n(pp, "pp")
    if not training:
        _check_n(dp, "dp")
        return 0.0
    return ring_all_reduce_bytes(spec.params_b * 1e9 / (tp * pp) * dtype_bytes(grad_dtype, "grad_dtype"), dp)


def tp_bytes(spec: ModelSpec, tp: int, tokens: int, dtype: str = "bf16", pp: int = 1, training: bool = False) -> float:
    """Tensor parallel (Megatron): 2 all-reduces per layer in the forward pass of tokens * hidden * bytes each,
    over this rank's n_layers / pp layers: n_layers / pp * 2 * ring(tokens * hidden * bytes, tp); x2 for training."""
    _check_tokens(tokens)
    _check_n(pp, "pp")
    per_all_reduce = ring_all_reduce_bytes(tokens * spec.hidden * dtype_bytes(dtype), tp)
    return spec.n_layers / pp * 2 * per_all_reduce * (2 if training else 1)


def pp_bytes(spec: ModelSpec, pp: int, tokens: int, dtype: str = "bf16", training: bool = False) -> float:
    """Pipeline parallel: a stage sends its activations, tokens * hidden * bytes, to the next one (0 when pp == 1);
    in training the same size of gradients comes back, so x2."""
    _check_n(pp, "pp")
    _check_tokens(tokens)
    if pp == 1:
        return 0.0
    return tokens * spec.hidden * dtype_bytes(dtype) * (2 if training else 1)


def ep_bytes(spec: ModelSpec, ep: int, tokens: int, dtype: str = "bf16", pp: int = 1, training: bool = False) -> float:
    """Expert parallel: per MoE layer an all-to-all dispatch and an all-to-all combine of tokens * top_k * hidden *
    bytes, (ep - 1) / ep of it to other ranks: moe_layers / pp * 2 * all_to_all(...); x2 for training; 0 if dense."""
    _check_n(ep, "ep")
    _check_n(pp, "pp")
    _check_tokens(tokens)
    if not spec.is_moe:
        return 0.0
    if ep > spec.experts or spec.experts % ep:
        raise ValueError(f"{spec.name}: ep ({ep}) must divide the {spec.experts} experts")
    one_way = all_to_all_bytes(tokens * spec.experts_active * spec.hidden * dtype_bytes(dtype), ep)
    return spec.moe_layers / pp * 2 * one_way * (2 if training else 1)


def _spec(spec: ModelSpec | str) -> ModelSpec:
    if isinstance(spec, str):
        if spec not in MODELS:
            raise ValueError(f"unknown model {spec!r}; MODELS has {sorted(MODELS)}")
        return MODELS[spec]
    if not isinstance(spec, ModelSpec):
        raise TypeError(f"expected a ModelSpec or a name in MODELS, got {type(spec).__name__}")
    return spec


def comm_table(spec: ModelSpec | str, cluster: Cluster | str, tokens: int = 4096, dtype: str = "bf16",
               training: bool = False) -> list[dict[str, Any]]:
    """One row per parallelism form for `spec` on `cluster`: degree, the formula, bytes each rank sends per step,
    the link it uses ("none" at degree 1) and the seconds that takes at the link's bandwidth (no overlap, no
    latency)."""
    spec = _spec(spec)
    if isinstance(cluster, str):
        if cluster not in CLUSTERS:
            raise ValueError(f"unknown cluster {cluster!r}; CLUSTERS has {sorted(CLUSTERS)}")
        cluster = CLUSTERS[cluster]
    c = cluster
    forms = [
        ("data", c.dp, c.gpus, dp_bytes(spec, c.dp, dtype, c.tp, c.pp, training),
         "ring(params/(tp*pp) * b, dp), training only"),
        ("tensor", c.tp, c.tp, tp_bytes(spec, c.tp, tokens, dtype, c.pp, training),
         "layers/pp * 2 all-reduces * ring(tokens*hidden*b, tp)" + (" * 2 (backward)" if training else "")),
        ("pipeline", c.pp, c.tp * c.pp, pp_bytes(spec, c.pp, tokens, dtype, training),
         "tokens*hidden*b per stage boundary" + (" * 2 (gradients back)" if training else "")),
        ("expert", c.ep, c.ep, ep_bytes(spec, c.ep, tokens, dtype, c.pp, training) if spec.is_moe else 0.0,
         "moe_layers/pp * 2 (dispatch+combine) * tokens*top_k*hidden*b * (ep-1)/ep" if spec.is_moe
         else "dense model: no experts"),
    ]
    rows = []
    for form, degree, span, nbytes, formula in forms:
        gbs = c.link_gbs(span)
        link = "none" if degree == 1 else "intra-node" if span <= c.gpus_per_node else "inter-node"
        rows.append({"form": form, "degree": degree, "formula": formula, "bytes_per_rank": nbytes,
                     "link": link, "link_gbs": gbs, "seconds": nbytes / (gbs * 1e9)})
    return rows


def comm_figure(spec: ModelSpec | str, tokens: int = 4096, dtype: str = "bf16", training: bool = False,
                degrees: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64), height: int = 420) -> Any:
    """A plotly figure: bytes each rank sends per step against the degree of each parallelism form alone
    (the others 1), for `spec` at `tokens` tokens per step."""
    import plotly.graph_objects as go

    spec = _spec(spec)
    series = {
        "data (gradients)": [dp_bytes(spec, n, dtype, training=training) for n in degrees],
        "tensor": [tp_bytes(spec, n, tokens, dtype, training=training) for n in degrees],
        "pipeline": [pp_bytes(spec, n, tokens, dtype, training=training) for n in degrees],
    }
    if spec.is_moe:
        series["expert"] = [ep_bytes(spec, n, tokens, dtype, training=training) if spec.experts % n == 0
                            else None for n in degrees]
    fig = go.Figure()
    for name, ys in series.items():
        fig.add_trace(go.Scatter(x=list(degrees), y=[y if y else None for y in ys], mode="lines+markers", name=name,
                                 hovertemplate=f"{name}: degree %{{x}}: %{{y:.3s}}B per rank<extra></extra>"))
    mode = "training step" if training else "forward pass (inference)"
    fig.update_layout(title=f"{spec.name}: bytes each rank sends per {mode}, {tokens:,} tokens, {dtype}",
                      xaxis=dict(type="log", title="degree (ranks in the group)", tickvals=list(degrees)),
                      yaxis=dict(type="log", title="bytes per rank per step"), height=height)
    return fig
