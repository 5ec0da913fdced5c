"""Unit 01: the graph IR — typed SSA values, nodes, graphs, the op registry, verifier, text form,
ONNX import/export, the interpreter and the linearized (execution-order) view."""
from .errors import GraphError, RegistrationError, UnsupportedOpError
from .graph import Graph
from .node import Node
from .ops import (
    ONNX_CODES, ONNX_DTYPES, OPS, OpDef, constant_value, get_op, infer_node, infer_shapes, register_compute,
    register_op,
)
from .opset import DEFAULT_OPSET, MIN_OPSET
from .types import DTYPES, LAYOUTS, TensorType, dtype_name
from .verify import check, graph_diff, verify
from .text import parse_text, to_text
from .interpreter import NodeTiming, check_feeds, run_graph
from .linear import LinearOp, LinearProgram, format_linear, from_linear, to_linear

__all__ = [
    "DEFAULT_OPSET", "DTYPES", "LAYOUTS", "MIN_OPSET", "Graph", "GraphError", "Node", "ONNX_CODES", "ONNX_DTYPES",
    "OPS", "OpDef", "RegistrationError", "TensorType", "UnsupportedOpError", "constant_value", "dtype_name",
    "get_op", "infer_node", "infer_shapes", "register_compute", "register_op",
    "check", "graph_diff", "verify", "parse_text", "to_text", "NodeTiming", "check_feeds", "run_graph",
    "LinearOp", "LinearProgram", "format_linear", "from_linear", "to_linear",
]
