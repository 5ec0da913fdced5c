"""The op registry and the ops the IR knows (importing this package registers them all)."""
from . import elementwise, linalg, nn, normalization, reduce, tensor  # noqa: F401  (register the ops)
from ._util import ONNX_CODES, ONNX_DTYPES, broadcast_shapes
from .nn import window_params
from .registry import (
    OPS, OpDef, UnsupportedOpError, constant_value, get_op, infer_node, infer_shapes, register_op,
)

__all__ = [
    "ONNX_CODES", "ONNX_DTYPES", "OPS", "OpDef", "UnsupportedOpError", "broadcast_shapes", "constant_value",
    "get_op", "infer_node", "infer_shapes", "register_op", "window_params",
]
