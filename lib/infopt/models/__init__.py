"""Small models in plain torch with seeded random weights (nothing is downloaded), and their ONNX exports.

torch is imported only when a model is built.
"""
from .digits import digits_cnn, digits_mlp
from .export import export_onnx, resnet18_onnx, resnet50_onnx, transformer_block_onnx
from .resnet import calibrate_batchnorm, resnet18, resnet50
from .mobilenet import mobilenet_v3_small
from .sequence import sequence_classifier
from .shufflenet import shufflenet_v2
from .transformer import TransformerBlock, qkv_projections
from .vit import vit_block
from .zoo import MODELS, zoo_input, zoo_onnx

__all__ = [
    "MODELS", "TransformerBlock", "calibrate_batchnorm", "digits_cnn", "digits_mlp", "export_onnx",
    "mobilenet_v3_small", "qkv_projections", "resnet18", "resnet18_onnx", "resnet50", "resnet50_onnx",
    "sequence_classifier", "shufflenet_v2", "transformer_block_onnx", "vit_block", "zoo_input", "zoo_onnx",
]
