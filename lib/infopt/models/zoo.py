"""The models the IR is checked on beyond ResNet and the transformer block: torchvision-style CNNs, RNNs and a ViT
block written in plain torch (torchvision itself is unusable here), each with a seeded example input.

``zoo_onnx(name, dynamo)`` exports one with the TorchScript exporter (opset 17) or torch's default dynamo
exporter (opset 18), cached per process (each call returns a fresh copy).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class ZooModel:
    """A model builder, how to make its example input, and what it exercises."""

    build: Callable[[], Any]
    example: Callable[[int], Any]
    about: str


def _images(size: int) -> Callable[[int], Any]:
    def make(seed: int):
        import torch

        return torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(seed))
    return make


def _tokens(seed: int):
    import torch

    return torch.randint(0, 100, (2, 7), generator=torch.Generator().manual_seed(seed))


def _mobilenet():
    from .mobilenet import mobilenet_v3_small

    return mobilenet_v3_small()


def _shufflenet():
    from .shufflenet import shufflenet_v2

    return shufflenet_v2()


def _gru():
    from .sequence import sequence_classifier

    return sequence_classifier("gru", layers=2)


def _lstm():
    from .sequence import sequence_classifier

    return sequence_classifier("lstm", layers=1, bidirectional=True)


def _vit():
    from .vit import vit_block

    return vit_block()


MODELS: dict[str, ZooModel] = {
    "mobilenet_v3_small": ZooModel(_mobilenet, _images(64), "depthwise convs, HardSwish, squeeze-excite"),
    "shufflenet_v2": ZooModel(_shufflenet, _images(64), "channel split (Slice/Split) and shuffle, shape arithmetic"),
    "gru_classifier": ZooModel(_gru, _tokens, "Embedding (Gather on int64), a 2-layer GRU"),
    "lstm_classifier": ZooModel(_lstm, _tokens, "a bidirectional LSTM"),
    "vit_block": ZooModel(_vit, lambda seed: _images(32)(seed).repeat(2, 1, 1, 1),
                          "patch Conv, class token (Expand), nn.MultiheadAttention, LayerNorm, GELU"),
}
EXPORTERS = {"torchscript": (False, 17), "dynamo": (True, 18)}


@functools.lru_cache(maxsize=16)
def _cached(name: str, exporter: str) -> bytes:
    from .export import export_onnx

    dynamo, opset = EXPORTERS[exporter]
    zm = MODELS[name]
    return export_onnx(zm.build(), zm.example(0), dynamo=dynamo, opset=opset).SerializeToString()


def zoo_onnx(name: str, exporter: str = "torchscript"):
    """Model ``name`` of MODELS exported by ``exporter`` ("torchscript": opset 17, "dynamo": opset 18); input
    "input", output "output". Cached per process; each call returns a fresh ModelProto."""
    import onnx

    if name not in MODELS:
        raise KeyError(f"no zoo model {name!r}; choose from {sorted(MODELS)}")
    if exporter not in EXPORTERS:
        raise KeyError(f"exporter must be one of {sorted(EXPORTERS)}, got {exporter!r}")
    return onnx.load_from_string(_cached(name, exporter))


def zoo_input(name: str, seed: int = 0):
    """The example input of model ``name`` as a numpy array (images f32, token ids i64)."""
    return MODELS[name].example(seed).numpy()
