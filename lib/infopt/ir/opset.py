"""The ONNX opsets of the default domain the IR reads and writes: 13 up to the newest that onnx defines.

A graph carries the opset it was imported at (``Graph.opset``); a graph built in Python starts at
``DEFAULT_OPSET``. Export writes the graph's opset unless asked for another one.
"""
from __future__ import annotations

import functools

MIN_OPSET = 13
DEFAULT_OPSET = 17


@functools.lru_cache(maxsize=1)
def max_opset() -> int:
    """The newest default-domain opset the installed onnx defines (28 for onnx 1.23)."""
    import onnx

    return int(onnx.defs.onnx_opset_version())


def check_opset(opset: int, what: str) -> int:
    """``opset`` as an int, or a ValueError saying which opsets the IR handles and what to do."""
    if isinstance(opset, bool) or not isinstance(opset, int):
        raise TypeError(f"{what}: the opset must be an int, got {opset!r}")
    if not MIN_OPSET <= opset <= max_opset():
        raise ValueError(
            f"{what}: opset {opset} is outside the opsets the infopt IR reads and writes ({MIN_OPSET}..{max_opset()}, "
            f"the newest onnx {_onnx_version()} defines). Re-export the model at an opset in that range (torch: "
            f"opset_version=17 or 18), or convert it first with onnx.version_converter.convert_version(model, 17)."
        )
    return opset


def _onnx_version() -> str:
    import onnx

    return onnx.__version__
