"""Toy, the essence of MLIR's tutorial chapters 1-7, in xDSL: the language and its IR (`frontend`, `dialect`),
canonicalization patterns (`patterns`), interface-driven shape inference (`shapes`), the lowering to affine and
to LLVM with a native run (`lower`), and the numpy meaning of a program (`interpret`). Importing it imports xdsl."""
from .patterns import SimplifyRedundantTranspose, apply_patterns, canonicalize, remove_dead
from .dialect import TOY, AddOp, ConstantOp, MulOp, PrintOp, ReshapeOp, ShapeInference, TransposeOp
from .frontend import ToySyntaxError, emit_toy, parse_toy
from .interpret import run_toy
from .lower import lower_print, lower_to_affine, run_toy_native
from .shapes import infer_shapes

__all__ = ["TOY", "AddOp", "ConstantOp", "MulOp", "PrintOp", "ReshapeOp", "ShapeInference",
           "SimplifyRedundantTranspose", "TransposeOp", "ToySyntaxError", "apply_patterns", "canonicalize",
           "emit_toy", "infer_shapes", "lower_print", "lower_to_affine", "parse_toy", "remove_dead", "run_toy",
           "run_toy_native"]
