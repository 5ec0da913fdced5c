"""ONNX import and export: ``from_onnx`` (ModelProto, path or bytes -> Graph) and ``to_onnx`` (Graph -> ModelProto).

Both work natively at every default-domain opset from 13 to the newest onnx defines: import keeps the model's
opset (``Graph.opset``) and reads each node in that opset's form, export writes the graph's opset or the one asked
for, with each op's export fact rewriting nodes whose form differs there. See ``infopt.ir.onnx_import`` and
``infopt.ir.onnx_export`` for the details; this module is the public face of both.
"""
from __future__ import annotations

from .onnx_export import onnx_nodes, sync_opset_imports, to_onnx
from .onnx_import import INFOPT_DOMAIN, OnnxImportError, from_onnx, opset_range
from .ops.registry import register_export
from .opset import DEFAULT_OPSET, MIN_OPSET, max_opset

OPSET = DEFAULT_OPSET  # the opset of graphs built in Python (kept under its old name)
register_onnx_exporter = register_export  # register_onnx_exporter(op, fn(node, graph, opset) -> [Node], replace=False)

__all__ = [
    "DEFAULT_OPSET", "INFOPT_DOMAIN", "MIN_OPSET", "OPSET", "OnnxImportError", "from_onnx", "max_opset", "onnx_nodes",
    "opset_range", "register_onnx_exporter", "sync_opset_imports", "to_onnx",
]
