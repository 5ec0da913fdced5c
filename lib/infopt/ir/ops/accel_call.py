"""AccelCall: one partition of a graph offloaded to the systolic-array accelerator (unit 07's BYOC).

The op is defined here, like every op, so a graph holding AccelCall nodes verifies, prints and exports
whatever was imported; its compute runs the accelerator simulator, so ``infopt.accel.lowering`` registers it
(``register_compute``; importing infopt.accel.byoc imports it). Until then running such a node says so.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..errors import GraphError
from ..types import TensorType
from .registry import INFOPT_DOMAIN, OpDef, register_op


def _call_infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
    if "out_types" not in attrs:
        raise GraphError("AccelCall: attribute out_types (the partition's output shapes and dtypes) is missing; "
                         "build the node with infopt.accel.lowering.call_attrs")
    return [TensorType(tuple(s), d) for s, d in attrs["out_types"]]


register_op(OpDef(
    "AccelCall", _call_infer, None, (0, 1 << 30), domain=INFOPT_DOMAIN, compute_from="infopt.accel.lowering",
    doc="run an offloaded partition (MatMul/Gemm/Conv layers, ReLU fused) on the systolic-array simulator",
))
