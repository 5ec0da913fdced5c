"""The op registry and the ops the IR knows (importing this package registers them all)."""
from .registry import OPS, OpDef, UnsupportedOpError, get_op, infer_node, infer_shapes, register_op

__all__ = ["OPS", "OpDef", "UnsupportedOpError", "get_op", "infer_node", "infer_shapes", "register_op"]
