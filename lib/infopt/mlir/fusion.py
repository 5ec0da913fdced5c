"""Tile and fuse with the transform dialect: one dense layer, `relu(a @ b + bias)`, emitted as three linalg ops
(matmul, a broadcasting add, a max) and fused into one loop nest over output tiles, so the matmul's and the add's
results live one tile at a time instead of as whole M x N tensors.

    pipelines = layer_pipelines(M, N, (16, 32))  # {"unfused": stages, "tiled and fused": stages}
    compile_module(emit_graph(layer_graph(M, N, K)), pipelines["tiled and fused"])
    intermediate_bytes(bufferized_ir)             # bytes of the buffers a function allocates for itself
"""
from __future__ import annotations

import re

from ..ir.graph import Graph
from ..ir.types import TensorType
from .pipeline import MODEL_PIPELINE, Stage, with_stage

FUSE = """module attributes {{transform.with_named_sequence}} {{
  transform.named_sequence @__transform_main(%root: !transform.any_op {{transform.readonly}}) {{
    // the consumer: the last generic (ReLU); the one before it is the bias add
    %generics = transform.structured.match ops{{["linalg.generic"]}} in %root : (!transform.any_op) -> !transform.any_op
    %add, %relu = transform.split_handle %generics : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    // tile the consumer: one loop iteration per {tm} x {tn} tile of the output
    %tiled, %loop = transform.structured.tile_using_forall %relu tile_sizes [{tm}, {tn}]
      : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    // fuse each producer into the loop: it computes just the tile its consumer reads
    %add2, %loop2 = transform.structured.fuse_into_containing_op %add into %loop
      : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    %mm = transform.structured.match ops{{["linalg.matmul"]}} in %root : (!transform.any_op) -> !transform.any_op
    %mm2, %loop3 = transform.structured.fuse_into_containing_op %mm into %loop2
      : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    %fill = transform.structured.match ops{{["linalg.fill"]}} in %root : (!transform.any_op) -> !transform.any_op
    %fill2, %loop4 = transform.structured.fuse_into_containing_op %fill into %loop3
      : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }}
}}
"""


def layer_graph(M: int, N: int, K: int) -> Graph:
    """relu(a @ b + bias) with a: (M, K), b: (K, N), bias: (N,), as an infopt graph."""
    for name, v in (("M", M), ("N", N), ("K", K)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    g = Graph("dense_relu")
    g.add_input("a", TensorType((M, K)))
    g.add_input("b", TensorType((K, N)))
    g.add_input("bias", TensorType((N,)))
    (mm,) = g.add_node("MatMul", ["a", "b"], {}, name="matmul").outputs
    (biased,) = g.add_node("Add", [mm, "bias"], {}, name="add_bias").outputs
    g.outputs = g.add_node("Relu", [biased], {}, name="relu").outputs
    return g


def fuse_script(tile: tuple[int, int]) -> str:
    """The transform schedule: tile the ReLU by `tile` (rows, columns of the output), fuse add, matmul and fill."""
    if len(tile) != 2 or min(tile) < 1:
        raise ValueError(f"tile must be two positive sizes (rows, columns), got {tile}")
    return FUSE.format(tm=tile[0], tn=tile[1])


def layer_pipelines(M: int, N: int, tile: tuple[int, int] = (16, 32)) -> dict[str, tuple[Stage, ...]]:
    """The M x N layer compiled as emitted ("unfused"), and tiled and fused on tensors before bufferization. The tile
    must divide M and N: the loops stage lowers to affine loops, which take static tile sizes only."""
    script = fuse_script(tile)
    if M % tile[0] or N % tile[1]:
        raise ValueError(f"the tile {tile} must divide the output ({M}, {N}): partial tiles have dynamic sizes, "
                         "which the affine loops of the 'loops' stage cannot take")
    fused = with_stage(MODEL_PIPELINE, "tensors",
                       Stage("fused", ("--canonicalize", "--cse"), f"transform dialect: tile the ReLU by {tile}, fuse "
                             "the add, the matmul and the fill into its loop", script))
    fused = with_stage(fused, "bufferized", Stage("forall-to-for", ("--scf-forall-to-for", "--canonicalize"),
                                                  "the tile loop (scf.forall) becomes scf.for loops"))
    return {"unfused": MODEL_PIPELINE, "tiled and fused": fused}


_ALLOC = re.compile(r"memref\.alloc\(\)(?:\s*\{[^}]*\})?\s*:\s*memref<([0-9x]+)x(f32|f64|i32|i8)>")
_BYTES = {"f32": 4, "f64": 8, "i32": 4, "i8": 1}


def intermediate_bytes(ir: str) -> int:
    """Bytes of the buffers the IR allocates itself (`memref.alloc`, each counted once where it is written)."""
    total = 0
    for dims, elem in _ALLOC.findall(ir):
        n = 1
        for d in dims.split("x"):
            n *= int(d)
        total += n * _BYTES[elem]
    return total
