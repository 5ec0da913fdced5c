"""Unit 12 (quantization): calibration and QDQ insertion so far, a preview used by unit 02.

``calibrate_minmax`` observes value ranges by running the graph; ``InsertQDQ`` puts QuantizeLinear ->
DequantizeLinear pairs on them (the ops themselves are standard ONNX ops in ``infopt.ir.ops``).
"""
from .qdq import InsertQDQ, calibrate_minmax, qparams, quant_targets

__all__ = ["InsertQDQ", "calibrate_minmax", "qparams", "quant_targets"]
