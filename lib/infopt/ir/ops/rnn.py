"""Recurrent layers: GRU and LSTM with ONNX semantics (gate order, directions, layouts, sequence lengths).

Shapes for ``layout=0``: X [seq, batch, input]; W [dirs, G*hidden, input]; R [dirs, G*hidden, hidden];
B [dirs, 2*G*hidden] (input then recurrence biases); initial_h (and LSTM's initial_c) [dirs, batch, hidden];
outputs Y [seq, dirs, batch, hidden] and Y_h (Y_c) [dirs, batch, hidden]. ``layout=1`` puts batch first:
X [batch, seq, input], Y [batch, seq, dirs, hidden], Y_h [batch, dirs, hidden]. Gates: GRU z, r, h (G=3); LSTM
i, o, f, c (G=4) with optional peepholes P [dirs, 3*hidden] (i, o, f). ``direction`` is forward, reverse or
bidirectional (dirs=2, forward first). ``sequence_lens`` [batch] stops each sequence early: its outputs past the
end are 0 and its Y_h is the last step it ran. ``clip`` bounds the gate pre-activations; ``activations`` (f, g
and LSTM's h per direction; defaults Sigmoid, Tanh, Tanh) take ``activation_alpha``/``activation_beta`` in order
(onnxruntime's defaults where a list runs out).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..errors import GraphError
from ..types import TensorType
from .common import FLOATS, as_dtype
from .elementwise import hard_sigmoid
from .registry import OpDef, register_op

# activation -> (function of x, alpha, beta; default alpha; default beta; how many of alpha/beta it takes)
_ACTS: dict[str, tuple[Callable[[np.ndarray, float, float], np.ndarray], float, float, int]] = {
    "Sigmoid": (lambda x, a, b: 0.5 * (1.0 + np.tanh(0.5 * x)), 0.0, 0.0, 0),
    "Tanh": (lambda x, a, b: np.tanh(x), 0.0, 0.0, 0),
    "Relu": (lambda x, a, b: np.maximum(x, 0.0), 0.0, 0.0, 0),
    "Affine": (lambda x, a, b: a * x + b, 1.0, 0.0, 2),
    "LeakyRelu": (lambda x, a, b: np.where(x >= 0, x, a * x), 0.01, 0.0, 1),
    "ThresholdedRelu": (lambda x, a, b: np.where(x > a, x, 0.0), 1.0, 0.0, 1),
    "ScaledTanh": (lambda x, a, b: a * np.tanh(b * x), 1.0, 1.0, 2),
    "HardSigmoid": (lambda x, a, b: hard_sigmoid(x, a, b), 0.2, 0.5, 2),
    "Elu": (lambda x, a, b: np.where(x >= 0, x, a * (np.exp(np.minimum(x, 0.0)) - 1.0)), 1.0, 0.0, 1),
    "Softsign": (lambda x, a, b: x / (1.0 + np.abs(x)), 0.0, 0.0, 0),
    "Softplus": (lambda x, a, b: np.logaddexp(0.0, x), 0.0, 0.0, 0),
}
_DIRECTIONS = ("forward", "reverse", "bidirectional")


def _activations(op: str, attrs: dict[str, Any], per_dir: int, dirs: int) -> list[Callable[[np.ndarray], np.ndarray]]:
    names = [str(n) for n in attrs.get("activations", [])] or (["Sigmoid", "Tanh", "Tanh"][:per_dir] * dirs)
    if len(names) != per_dir * dirs:
        raise GraphError(f"{op}: activations {names} must list {per_dir} per direction ({per_dir * dirs} in all)")
    alphas, betas = list(attrs.get("activation_alpha", [])), list(attrs.get("activation_beta", []))
    fns = []
    for name in names:
        key = next((k for k in _ACTS if k.lower() == name.lower()), None)
        if key is None:
            raise GraphError(f"{op}: activation {name!r} is not one of {', '.join(_ACTS)}")
        fn, a0, b0, n = _ACTS[key]
        a = float(alphas.pop(0)) if n >= 1 and alphas else a0
        b = float(betas.pop(0)) if n >= 2 and betas else b0
        fns.append(lambda x, fn=fn, a=a, b=b: fn(x, a, b))
    return fns


def _rnn_infer(op: str, gates: int, n_states: int):
    def infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
        x, w, r = types[0], types[1], types[2]
        if x.dtype not in FLOATS:
            raise GraphError(f"{op}: needs a floating-point X, got {x.dtype}")
        direction = attrs.get("direction", "forward")
        if direction not in _DIRECTIONS:
            raise GraphError(f"{op}: direction {direction!r} is not one of {_DIRECTIONS}")
        dirs = 2 if direction == "bidirectional" else 1
        if "hidden_size" not in attrs:
            raise GraphError(f"{op}: attribute hidden_size is required")
        hidden = int(attrs["hidden_size"])
        layout = int(attrs.get("layout", 0))
        if x.rank != 3:
            raise GraphError(f"{op}: X must be 3-D ({'[batch, seq, input]' if layout else '[seq, batch, input]'}), got {x}")
        seq, batch = (x.shape[1], x.shape[0]) if layout else x.shape[:2]
        want = {"W": (w, (dirs, gates * hidden, x.shape[2])), "R": (r, (dirs, gates * hidden, hidden))}
        if len(types) > 3 and types[3] is not None:
            want["B"] = (types[3], (dirs, 2 * gates * hidden))
        if len(types) > 4 and types[4] is not None:
            want["sequence_lens"] = (types[4], (batch,))
        state = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
        for k, what in enumerate(("initial_h", "initial_c")[:n_states], 5):
            if len(types) > k and types[k] is not None:
                want[what] = (types[k], state)
        if n_states == 2 and len(types) > 7 and types[7] is not None:
            want["P"] = (types[7], (dirs, 3 * hidden))
        for what, (t, shape) in want.items():
            if t.shape != shape:
                raise GraphError(f"{op}: {what} has shape {t.shape}, expected {shape} (hidden_size={hidden}, "
                                 f"direction={direction}, X {x})")
        y = (batch, seq, dirs, hidden) if layout else (seq, dirs, batch, hidden)
        return [TensorType(y, x.dtype)] + [TensorType(state, x.dtype) for _ in range(n_states)]
    return infer


def _inputs(xs: Sequence[np.ndarray | None], attrs: dict[str, Any], gates: int, n_states: int):
    """X as [seq, batch, input] and the optional inputs filled with ONNX's defaults, in f64."""
    layout = int(attrs.get("layout", 0))
    x = xs[0].astype(np.float64)
    if layout:
        x = x.transpose(1, 0, 2)
    seq, batch = x.shape[:2]
    dirs, hidden = xs[1].shape[0], int(attrs["hidden_size"])
    get = lambda k: xs[k] if len(xs) > k and xs[k] is not None else None  # noqa: E731
    b = get(3)
    b = np.zeros((dirs, 2 * gates * hidden)) if b is None else b.astype(np.float64)
    lens = get(4)
    lens = np.full(batch, seq, np.int64) if lens is None else lens.astype(np.int64)
    states = []
    for k in range(5, 5 + n_states):
        s = get(k)
        s = np.zeros((dirs, batch, hidden)) if s is None else s.astype(np.float64)
        states.append(s.transpose(1, 0, 2) if layout and get(k) is not None else s)
    p = get(7) if n_states == 2 else None
    p = np.zeros((dirs, 3 * hidden)) if p is None else p.astype(np.float64)
    return x, xs[1].astype(np.float64), xs[2].astype(np.float64), b, lens, states, p


def _steps(seq: int, lens: np.ndarray, reverse: bool):
    """For each step s: the time index per batch element and which elements are still running."""
    for s in range(seq):
        t = (lens - 1 - s) if reverse else np.full_like(lens, s)
        yield s, np.clip(t, 0, seq - 1), s < lens


def _outputs(xs: Sequence[np.ndarray | None], attrs: dict[str, Any], ys: list[np.ndarray],
             finals: list[list[np.ndarray]]) -> list[np.ndarray]:
    dt = xs[0]
    y = np.stack(ys, axis=1)  # [seq, dirs, batch, hidden]
    states = [np.stack(f) for f in finals]  # [dirs, batch, hidden]
    if int(attrs.get("layout", 0)):
        y = y.transpose(2, 0, 1, 3)
        states = [s.transpose(1, 0, 2) for s in states]
    return [as_dtype(y, dt)] + [as_dtype(s, dt) for s in states]


def _clip(v: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
    c = attrs.get("clip")
    return v if c is None else np.clip(v, -float(c), float(c))


def _gru(xs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    x, W, R, B, lens, (h0,), _ = _inputs(xs, attrs, 3, 1)
    seq, batch = x.shape[:2]
    hidden, dirs = int(attrs["hidden_size"]), W.shape[0]
    direction = attrs.get("direction", "forward")
    acts = _activations("GRU", attrs, 2, dirs)
    lbr = int(attrs.get("linear_before_reset", 0))
    ys, finals = [], [[]]
    for d in range(dirs):
        f, g = acts[2 * d], acts[2 * d + 1]
        wz, wr, wh = np.split(W[d], 3)
        rz, rr, rh = np.split(R[d], 3)
        wbz, wbr, wbh, rbz, rbr, rbh = np.split(B[d], 6)
        h = h0[d].copy()
        y = np.zeros((seq, batch, hidden))
        reverse = direction == "reverse" or d == 1
        for s, t, alive in _steps(seq, lens, reverse):
            xt = x[t, np.arange(batch)]
            z = f(_clip(xt @ wz.T + h @ rz.T + wbz + rbz, attrs))
            r = f(_clip(xt @ wr.T + h @ rr.T + wbr + rbr, attrs))
            if lbr:
                hh = g(_clip(xt @ wh.T + r * (h @ rh.T + rbh) + wbh, attrs))
            else:
                hh = g(_clip(xt @ wh.T + (r * h) @ rh.T + rbh + wbh, attrs))
            new = (1 - z) * hh + z * h
            h = np.where(alive[:, None], new, h)
            y[t, np.arange(batch)] = np.where(alive[:, None], new, y[t, np.arange(batch)])
        ys.append(y)
        finals[0].append(h)
    return _outputs(xs, attrs, ys, finals)


def _lstm(xs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    x, W, R, B, lens, (h0, c0), P = _inputs(xs, attrs, 4, 2)
    seq, batch = x.shape[:2]
    hidden, dirs = int(attrs["hidden_size"]), W.shape[0]
    direction = attrs.get("direction", "forward")
    acts = _activations("LSTM", attrs, 3, dirs)
    coupled = int(attrs.get("input_forget", 0))
    ys, finals = [], [[], []]
    for d in range(dirs):
        f, g, hact = acts[3 * d: 3 * d + 3]
        wi, wo, wf, wc = np.split(W[d], 4)
        ri, ro, rf, rc = np.split(R[d], 4)
        wbi, wbo, wbf, wbc, rbi, rbo, rbf, rbc = np.split(B[d], 8)
        pi, po, pf = np.split(P[d], 3)
        h, c = h0[d].copy(), c0[d].copy()
        y = np.zeros((seq, batch, hidden))
        reverse = direction == "reverse" or d == 1
        for s, t, alive in _steps(seq, lens, reverse):
            xt = x[t, np.arange(batch)]
            i = f(_clip(xt @ wi.T + h @ ri.T + pi * c + wbi + rbi, attrs))
            fg = 1 - i if coupled else f(_clip(xt @ wf.T + h @ rf.T + pf * c + wbf + rbf, attrs))
            cc = g(_clip(xt @ wc.T + h @ rc.T + wbc + rbc, attrs))
            c_new = fg * c + i * cc
            o = f(_clip(xt @ wo.T + h @ ro.T + po * c_new + wbo + rbo, attrs))
            h_new = o * hact(c_new)
            h = np.where(alive[:, None], h_new, h)
            c = np.where(alive[:, None], c_new, c)
            y[t, np.arange(batch)] = np.where(alive[:, None], h_new, y[t, np.arange(batch)])
        ys.append(y)
        finals[0].append(h)
        finals[1].append(c)
    return _outputs(xs, attrs, ys, finals)


register_op(OpDef("GRU", _rnn_infer("GRU", 3, 1), _gru, (3, 6), num_outputs=(0, 2),
                  doc="gated recurrent unit over a sequence (z, r, h gates; linear_before_reset; directions)"))
register_op(OpDef("LSTM", _rnn_infer("LSTM", 4, 2), _lstm, (3, 8), num_outputs=(0, 3),
                  doc="long short-term memory over a sequence (i, o, f, c gates; peepholes; directions)"))
