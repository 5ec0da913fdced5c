"""Export torch models to ONNX, with the legacy TorchScript exporter (default) or torch's default dynamo exporter.

torch 2.13's default exporter (``dynamo=True``) goes through torch.export and onnxscript and writes opset 18;
the legacy TorchScript exporter (``dynamo=False``) is faster on these small models (the course's default, at
opset 17). The IR imports both natively. What ``do_constant_folding`` changes for ResNet-18:
  - True: the exporter folds each eval-mode BatchNorm into the preceding Conv's weights and bias,
    so the graph holds Conv/Relu/MaxPool/Add/GlobalAveragePool/Flatten/Gemm only;
  - False: BatchNormalization nodes stay, as written in the model (unit 02 folds them itself).
Measured with torch 2.13 on our seeded ResNet-18: 20 Conv + 20 BatchNormalization nodes without folding,
20 Conv and no BatchNormalization with it, and no Identity nodes either way. The exporter writes
``Identity`` nodes only when several initializers hold equal contents (it keeps one copy), e.g. freshly
initialised BatchNorms whose weights are all ones; our BatchNorms are randomised and calibrated, so none are equal.
The dynamo exporter (``export_onnx(..., dynamo=True)``, opset 18 by default) runs onnxscript's optimizer; the
IR reads its Shape/Expand/CastLike/Split-18/Reduce-18 forms natively.
"""
from __future__ import annotations

import contextlib
import functools
import io
import os
import warnings
from pathlib import Path
from typing import Any, Sequence


def export_onnx(
    model: Any,
    example_inputs: Any,
    path: str | os.PathLike | None = None,
    do_constant_folding: bool = True,
    opset: int | None = None,
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    dynamo: bool = False,
):
    """Export ``model`` traced on ``example_inputs`` (a tensor or tuple) to an ``onnx.ModelProto`` (saved to ``path`` if
    given). ``dynamo=False`` (default): the TorchScript exporter at ``opset`` (default 17); ``dynamo=True``: torch's
    default exporter (torch.export + onnxscript, optimized) at ``opset`` (default 18). ``do_constant_folding``
    applies to the TorchScript exporter."""
    import onnx
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"export_onnx needs a torch.nn.Module, got {type(model).__name__}")
    args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    if not all(isinstance(a, torch.Tensor) for a in args):
        raise TypeError("example_inputs must be a torch.Tensor or a tuple of tensors (the shapes are fixed at export)")
    if input_names is None:
        input_names = ["input"] if len(args) == 1 else [f"input{i}" for i in range(len(args))]
    if output_names is None:
        output_names = ["output"]
    was_training = model.training
    model.eval()
    buf = io.BytesIO()
    try:
        with warnings.catch_warnings(), _quiet_logs():
            warnings.simplefilter("ignore")  # the exporter's deprecation notices would reach notebook stderr
            with torch.no_grad():
                if dynamo:
                    program = torch.onnx.export(
                        model, args, dynamo=True, opset_version=opset or 18, input_names=list(input_names),
                        output_names=list(output_names), verbose=False, optimize=True)
                    proto = program.model_proto
                else:  # nn.MultiheadAttention's eval fast path is one op the TorchScript exporter cannot write
                    fast = torch.backends.mha.get_fastpath_enabled()
                    torch.backends.mha.set_fastpath_enabled(False)
                    try:
                        torch.onnx.export(
                            model, args, buf, dynamo=False, opset_version=opset or 17,
                            do_constant_folding=do_constant_folding, input_names=list(input_names),
                            output_names=list(output_names),
                        )
                    finally:
                        torch.backends.mha.set_fastpath_enabled(fast)
                    proto = onnx.load_from_string(buf.getvalue())
    finally:
        model.train(was_training)
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        onnx.save(proto, str(path))
    return proto


@contextlib.contextmanager
def _quiet_logs():
    """Keep torch.onnx's logger (the dynamo exporter's notes on missing torchvision ops) off stderr for a while."""
    import logging

    loggers = [logging.getLogger(n) for n in ("torch.onnx", "torch.export", "torch._dynamo", "onnxscript")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for lg, lv in zip(loggers, levels):
            lg.setLevel(lv)


@functools.lru_cache(maxsize=4)
def _cached_bytes(kind: str, do_constant_folding: bool, batch: int, size: int, seed: int) -> bytes:
    import torch

    from .resnet import resnet18, resnet50
    from .transformer import TransformerBlock

    if kind == "resnet18":
        model, x = resnet18(seed=seed), torch.zeros(batch, 3, size, size)
    elif kind == "resnet50":
        model, x = resnet50(seed=seed), torch.zeros(batch, 3, size, size)
    elif kind == "transformer":
        model, x = TransformerBlock(seed=seed), torch.zeros(batch, size, 64)
    else:  # pragma: no cover - internal
        raise ValueError(kind)
    return export_onnx(model, x, do_constant_folding=do_constant_folding).SerializeToString()


def _load(data: bytes):
    import onnx

    return onnx.load_from_string(data)


def resnet18_onnx(do_constant_folding: bool = True, batch: int = 1, size: int = 224, seed: int = 0):
    """ResNet-18 exported to ONNX, input "input" (batch,3,size,size); cached, each call returns a fresh copy."""
    return _load(_cached_bytes("resnet18", bool(do_constant_folding), batch, size, seed))


def resnet50_onnx(do_constant_folding: bool = True, batch: int = 1, size: int = 224, seed: int = 0):
    """ResNet-50 exported to ONNX, input "input" (batch,3,size,size); cached, each call returns a fresh copy."""
    return _load(_cached_bytes("resnet50", bool(do_constant_folding), batch, size, seed))


def transformer_block_onnx(do_constant_folding: bool = True, batch: int = 1, seq: int = 16, seed: int = 0):
    """The default TransformerBlock (dim 64, 4 heads) exported to ONNX, input "input" (batch,seq,64); cached."""
    return _load(_cached_bytes("transformer", bool(do_constant_folding), batch, seq, seed))
