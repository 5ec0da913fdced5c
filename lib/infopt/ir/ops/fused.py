"""Ops that only infopt has, which the passes create: a fused convolution and a fused elementwise chain.

They are IR facts (inference, reference compute, ONNX form) like any other op, so the interpreter runs a
fused graph whatever was imported; ``infopt.passes`` only creates them. ``FusedConv`` has onnxruntime's
``com.microsoft.FusedConv`` semantics: ``Y = act(Conv(X, W, B) + Z)`` with the optional residual input Z and
``activation`` one of Relu, Sigmoid, Tanh (or "" for none). ``FusedElementwise`` runs a small program of
elementwise ops (attribute ``program``: one JSON string per step ``{"op": ..., "args": ["i0", "t0", ...],
"attrs": {...}}``; ``iK`` is input K, ``tK`` is step K's result; the last step is the output). Both export in
the "infopt" domain; ``infopt.passes.export`` writes them as standard ONNX ops.
"""
from __future__ import annotations

import json
from typing import Any, Sequence

import numpy as np

from ..errors import GraphError
from ..types import TensorType
from .registry import INFOPT_DOMAIN, OPS, OpDef, get_op, register_op

ACTIVATIONS = ("", "Relu", "Sigmoid", "Tanh")
FUSED_ATTRS = ("activation", "activation_params")


def conv_attrs(attrs: dict[str, Any]) -> dict[str, Any]:
    """The plain Conv attributes of a FusedConv (its activation settings removed)."""
    return {k: v for k, v in attrs.items() if k not in FUSED_ATTRS}


def fused_conv_infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
    """FusedConv's output type: Conv's, after checking the activation and the residual's shape."""
    act = attrs.get("activation", "")
    if act not in ACTIVATIONS:
        raise GraphError(f"FusedConv: activation {act!r} is not supported; use one of {ACTIVATIONS}")
    (y,) = get_op("Conv").infer(list(types[:3]), conv_attrs(attrs))
    if len(types) > 3 and types[3] is not None and types[3].shape != y.shape:
        raise GraphError(f"FusedConv: residual input Z has shape {types[3].shape}, the conv output {y.shape}")
    return [y]


def fused_conv(xs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    """FusedConv's reference compute: act(Conv(X, W, B) + Z)."""
    (y,) = get_op("Conv").compute(list(xs[:3]), conv_attrs(attrs))
    if len(xs) > 3 and xs[3] is not None:
        y = y + xs[3]
    act = attrs.get("activation", "")
    if act:
        (y,) = get_op(act).compute([y], {})
    return [y]


def decode_program(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    """The steps of a FusedElementwise node as dicts {op, args, attrs}."""
    try:
        steps = [json.loads(s) for s in attrs["program"]]
    except (KeyError, TypeError, ValueError) as e:
        raise GraphError(f"FusedElementwise: attribute 'program' must be a list of JSON step strings ({e})") from None
    if not steps:
        raise GraphError("FusedElementwise: empty program")
    return steps


def encode_step(op: str, args: list[str], attrs: dict[str, Any]) -> str:
    """One FusedElementwise step as its JSON string."""
    return json.dumps({"op": op, "args": args, "attrs": attrs}, sort_keys=True)


def _run_program(xs: Sequence[Any], attrs: dict[str, Any], infer: bool) -> Any:
    env: dict[str, Any] = {f"i{k}": x for k, x in enumerate(xs)}
    for k, step in enumerate(decode_program(attrs)):
        opdef = OPS.get(step["op"])
        if opdef is None or not opdef.elementwise:
            raise GraphError(f"FusedElementwise: step {k} op {step['op']!r} is not a registered elementwise op")
        try:
            args = [env[a] if a else None for a in step["args"]]
        except KeyError as e:
            raise GraphError(f"FusedElementwise: step {k} reads {e} before it is defined") from None
        fn = opdef.infer if infer else opdef.compute
        (env[f"t{k}"],) = fn(args, step.get("attrs", {}))
    return env[f"t{k}"]


register_op(OpDef(
    "FusedConv", fused_conv_infer, fused_conv, (2, 4), domain=INFOPT_DOMAIN,
    doc="act(Conv(X, W, B) + Z): a convolution with its bias, residual add and activation fused (infopt.passes).",
))
register_op(OpDef(
    "FusedElementwise", lambda ts, a: [_run_program(ts, a, True)], lambda xs, a: [_run_program(xs, a, False)],
    (1, 64), elementwise=True, domain=INFOPT_DOMAIN,
    doc="A chain of elementwise ops run as one kernel (infopt.passes.fusion); attribute program.",
))
