"""The graphs the MLIR tests share: the digits MLP and CNN, the transformer block and ResNet-18, as infopt graphs."""
from __future__ import annotations

import functools


@functools.lru_cache(maxsize=None)
def _graph(name: str):
    import torch

    from infopt.ir.onnx_io import from_onnx
    from infopt.models import digits_cnn, digits_mlp, export_onnx, resnet18_onnx, transformer_block_onnx

    if name == "mlp":
        return from_onnx(export_onnx(digits_mlp(), torch.zeros(2, 64)))
    if name == "cnn":
        return from_onnx(export_onnx(digits_cnn(), torch.zeros(2, 1, 8, 8)))
    if name == "transformer":
        return from_onnx(transformer_block_onnx())
    if name == "resnet18":
        return from_onnx(resnet18_onnx(size=32))
    raise ValueError(name)


def model_graph(name: str):
    """A fresh copy of model `name` ("mlp", "cnn", "transformer", "resnet18") as an infopt graph."""
    return _graph(name).copy()
