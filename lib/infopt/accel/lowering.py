"""Codegen for offloaded layers: MatMul, Gemm and Conv (by im2col) lowered to command streams and run on
the simulator, plus the ``AccelCall`` op that runs one partition and the per-layer report it fills in."""
from __future__ import annotations

import contextlib
import contextvars
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator, Sequence

import numpy as np

from ..ir.graph import GraphError
from ..ir.ops.registry import register_compute
from ..ir.types import TensorType
from .config import AccelConfig, AccelError
from .driver import compile_matmul
from .simulator import Accelerator, RunStats

ACCEL_OPS = ("MatMul", "Gemm", "Conv")
"""Ops the accelerator computes (ReLU rides along on the output path of one of them)."""


def conv_params(x_shape: Sequence[int], w_shape: Sequence[int], attrs: dict[str, Any]) -> dict[str, Any]:
    """Pads, strides, dilations and output size of a 2-D Conv, or an AccelError naming the unsupported attribute."""
    if len(x_shape) != 4 or len(w_shape) != 4:
        raise AccelError(f"Conv: only 2-D convolutions (NCHW) are offloaded, got input rank {len(x_shape)}")
    if int(attrs.get("group", 1)) != 1:
        raise AccelError(f"Conv: group={attrs.get('group')} is not offloaded (im2col covers group=1 only)")
    auto = attrs.get("auto_pad", "NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    if auto not in ("NOTSET", "VALID"):
        raise AccelError(f"Conv: auto_pad={auto} is not offloaded; export the model with explicit pads")
    pads = [int(p) for p in attrs.get("pads", [0, 0, 0, 0])] if auto == "NOTSET" else [0, 0, 0, 0]
    strides = [int(s) for s in attrs.get("strides", [1, 1])]
    dil = [int(d) for d in attrs.get("dilations", [1, 1])]
    kh, kw = int(w_shape[2]), int(w_shape[3])
    H = x_shape[2] + pads[0] + pads[2]
    W = x_shape[3] + pads[1] + pads[3]
    Ho = (H - (kh - 1) * dil[0] - 1) // strides[0] + 1
    Wo = (W - (kw - 1) * dil[1] - 1) // strides[1] + 1
    return {"pads": pads, "strides": strides, "dilations": dil, "kernel": (kh, kw), "out": (Ho, Wo)}


def im2col(x: np.ndarray, p: dict[str, Any]) -> np.ndarray:
    """Rows of input patches: (N * Ho * Wo, Cin * kh * kw), so that a conv is one matmul with the weights."""
    t, l, b, r = p["pads"]
    x = np.pad(x, ((0, 0), (0, 0), (t, b), (l, r)))
    (kh, kw), (Ho, Wo), (sh, sw), (dh, dw) = p["kernel"], p["out"], p["strides"], p["dilations"]
    n, c = x.shape[:2]
    cols = np.empty((n, Ho, Wo, c, kh, kw), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            cols[..., i, j] = x[:, :, i * dh: i * dh + sh * (Ho - 1) + 1: sh, j * dw: j * dw + sw * (Wo - 1) + 1: sw].transpose(0, 2, 3, 1)
    return cols.reshape(n * Ho * Wo, c * kh * kw)


def layer_matmul(op: str, xs: Sequence[np.ndarray | None], attrs: dict[str, Any]):
    """The matmul a layer reduces to: (A, B, bias or None, finish) with ``finish(C)`` giving the layer's output."""
    if op == "MatMul":
        a, b = xs[0], xs[1]
        if b.ndim != 2 or a.ndim < 2:
            raise AccelError(f"MatMul: offloaded only as (..., K) x (K, N), got {a.shape} x {b.shape}")
        lead = a.shape[:-1]
        return a.reshape(-1, a.shape[-1]), b, None, lambda c: c.reshape(*lead, b.shape[1])
    if op == "Gemm":
        if attrs.get("transA", 0) or float(attrs.get("alpha", 1.0)) != 1.0 or float(attrs.get("beta", 1.0)) != 1.0:
            raise AccelError("Gemm: offloaded only with transA=0, alpha=1, beta=1")
        a, b = xs[0], xs[1]
        b = np.ascontiguousarray(b.T) if attrs.get("transB", 0) else b  # the driver lays weights out K x N
        bias = xs[2] if len(xs) > 2 else None
        if bias is not None:
            if bias.size != b.shape[1] or (bias.ndim == 2 and bias.shape[0] != 1):
                raise AccelError(f"Gemm: bias of shape {bias.shape} is not a row of N={b.shape[1]}")
            bias = bias.reshape(-1)
        return a, b, bias, lambda c: c
    if op == "Conv":
        x, w = xs[0], xs[1]
        p = conv_params(x.shape, w.shape, attrs)
        cout = w.shape[0]
        n = x.shape[0]
        Ho, Wo = p["out"]
        bias = xs[2] if len(xs) > 2 else None
        return im2col(x, p), np.ascontiguousarray(w.reshape(cout, -1).T), bias, \
            lambda c: np.ascontiguousarray(c.reshape(n, Ho, Wo, cout).transpose(0, 3, 1, 2))
    raise AccelError(f"op {op} is not offloaded; the accelerator runs {ACCEL_OPS}")


# ----- the per-layer report ------------------------------------------------------------------------------
@dataclass
class LayerReport:
    """One offloaded layer: its matmul shape (M, N, K) and what it cost on the simulator."""

    call: str
    layer: str
    op: str
    mnk: tuple[int, int, int]
    relu: bool
    stats: RunStats

    def row(self) -> dict[str, Any]:
        """The layer as one flat table row."""
        s = self.stats
        return {
            "call": self.call, "layer": self.layer, "op": self.op + ("+Relu" if self.relu else ""),
            "M": self.mnk[0], "N": self.mnk[1], "K": self.mnk[2], "cycles": s.cycles,
            "compute_cycles": s.compute_cycles, "dma_cycles": s.dma_cycles,
            "utilization": round(s.utilization, 4), "dma_bytes": s.dma_bytes,
        }


@dataclass
class OffloadReport:
    """Every offloaded layer run while the report was collecting, in execution order."""

    layers: list = field(default_factory=list)

    def table(self) -> list[dict[str, Any]]:
        """One row (dict) per layer."""
        return [layer.row() for layer in self.layers]

    @property
    def cycles(self) -> int:
        """Total accelerator cycles of all layers."""
        return sum(layer.stats.cycles for layer in self.layers)

    def format(self) -> str:
        """A fixed-width text table, one line per layer and a total line."""
        rows = self.table()
        if not rows:
            return "(no layers ran on the accelerator)"
        head = f"{'call':<10} {'layer':<14} {'op':<10} {'M x N x K':>16} {'cycles':>9} {'dma cyc':>8} {'util':>6} {'DMA bytes':>10}"
        lines = [head, "-" * len(head)]
        for r in rows:
            mnk = f"{r['M']}x{r['N']}x{r['K']}"
            lines.append(f"{r['call'][:10]:<10} {r['layer'][:14]:<14} {r['op']:<10} {mnk:>16} {r['cycles']:>9} "
                         f"{r['dma_cycles']:>8} {r['utilization']:>6.1%} {r['dma_bytes']:>10}")
        tot_macs = sum(lr.stats.macs for lr in self.layers)
        pes = self.layers[0].stats.config.rows * self.layers[0].stats.config.cols
        util = tot_macs / (pes * max(self.cycles, 1))
        dma = sum(r["dma_bytes"] for r in rows)
        lines.append(f"{'total':<10} {'':<14} {'':<10} {'':>16} {self.cycles:>9} "
                     f"{sum(r['dma_cycles'] for r in rows):>8} {util:>6.1%} {dma:>10}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()


_REPORT: contextvars.ContextVar[OffloadReport | None] = contextvars.ContextVar("infopt_accel_report", default=None)


@contextlib.contextmanager
def collect_report() -> Iterator[OffloadReport]:
    """Within the block, every AccelCall that runs appends its layers to the yielded report."""
    rep = OffloadReport()
    token = _REPORT.set(rep)
    try:
        yield rep
    finally:
        _REPORT.reset(token)


def run_layer(op: str, xs: Sequence[np.ndarray | None], attrs: dict[str, Any], config: AccelConfig,
              relu: bool = False, mode: str = "vector") -> tuple[np.ndarray, RunStats, tuple[int, int, int]]:
    """Run one MatMul/Gemm/Conv (optionally with its ReLU) on the simulator: (output, stats, (M, N, K))."""
    a, b, bias, finish = layer_matmul(op, xs, attrs)
    dt = config.operand_dtype
    for what, v in (("input", a), ("weight", b)):
        if v.dtype != dt:
            raise AccelError(f"{op}: {what} is {v.dtype} but the accelerator takes {config.dtype}")
    M, K = a.shape
    N = b.shape[1]
    dram = {"A": np.ascontiguousarray(a), "B": np.ascontiguousarray(b), "C": np.zeros((M, N), config.acc_dtype)}
    if bias is not None:
        dram["bias"] = np.asarray(bias, config.acc_dtype).reshape(1, N)
    prog = compile_matmul(M, N, K, config, bias=bias is not None, relu=relu)
    stats = Accelerator(config).run(prog, dram, mode=mode)
    return finish(dram["C"]), stats, (M, N, K)


# ----- the AccelCall op (defined in infopt.ir.ops.accel_call): one partition, run layer by layer on the simulator -
def _call_compute(xs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    config = AccelConfig(**attrs["config"])
    env = dict(zip(attrs["inputs"], xs))
    rep = _REPORT.get()
    for layer in attrs["layers"]:
        ins = [env[i] if i else None for i in layer["inputs"]]
        out, stats, mnk = run_layer(layer["op"], ins, layer["attrs"], config, relu=bool(layer["relu"]))
        env[layer["output"]] = out
        if rep is not None:
            rep.layers.append(LayerReport(attrs["call"], layer["name"], layer["op"], mnk, bool(layer["relu"]), stats))
    return [env[o] for o in attrs["outputs"]]


register_compute("AccelCall", _call_compute)


def call_attrs(call: str, config: AccelConfig, inputs: list[str], outputs: list[str], layers: list[dict],
               out_types: list[TensorType]) -> dict[str, Any]:
    """The attributes of an AccelCall node, as plain data (so graphs copy, print and compare simply)."""
    if not layers:
        raise GraphError(f"AccelCall {call}: a partition needs at least one layer")
    return {
        "call": call, "config": asdict(config), "inputs": list(inputs), "outputs": list(outputs),
        "layers": layers, "out_types": [(tuple(t.shape), t.dtype) for t in out_types],
    }
