"""The op registry and every op the IR knows (importing this package defines them all).

Standard ONNX ops: ``elementwise``, ``linalg``, ``nn``, ``normalization``, ``reduce``, ``tensor``, ``rnn``,
``quantize``. Ops only infopt has, which passes and backends create: ``fused`` (FusedConv, FusedElementwise),
``layouts`` (ConvNHWC and the NCHWc ops), ``accel_call`` (AccelCall). The set of ops is fixed here, so it never
depends on which other packages were imported.
"""
from . import (  # noqa: F401  (each module defines its ops)
    accel_call, elementwise, fused, layouts, linalg, nn, normalization, quantize, reduce, rnn, tensor,
)
from ..errors import UnsupportedOpError
from ..types import ONNX_CODES, ONNX_DTYPES
from .common import broadcast_shapes
from .infer import constant_value, infer_node, infer_shapes
from .nn import window_params
from .registry import INFOPT_DOMAIN, OPS, OpDef, get_op, register_compute, register_op

__all__ = [
    "INFOPT_DOMAIN", "ONNX_CODES", "ONNX_DTYPES", "OPS", "OpDef", "UnsupportedOpError", "broadcast_shapes",
    "constant_value", "get_op", "infer_node", "infer_shapes", "register_compute", "register_op", "window_params",
]
