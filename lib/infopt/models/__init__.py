"""Small models in plain torch with seeded random weights (nothing is downloaded), and their ONNX exports.

torch is imported only when a model is built.
"""
from .digits import digits_cnn, digits_mlp
from .export import export_onnx, resnet18_onnx, resnet50_onnx, transformer_block_onnx
from .resnet import calibrate_batchnorm, resnet18, resnet50
from .transformer import TransformerBlock, qkv_projections

__all__ = [
    "TransformerBlock", "calibrate_batchnorm", "digits_cnn", "digits_mlp", "export_onnx",
    "qkv_projections", "resnet18", "resnet18_onnx", "resnet50", "resnet50_onnx", "transformer_block_onnx",
]
