"""The input of the npu lowering: one memref `linalg.matmul` in a function `@matmul(A, B, C)`, as an xDSL module."""
from __future__ import annotations

from typing import Any

from ...accel import AccelConfig
from ..xdsl_ir import parse_module
from .dialect import NPU


def matmul_text(M: int, N: int, K: int, config: AccelConfig) -> str:
    """MLIR text of C = A @ B (A: M x K, B: K x N) on memrefs of the config's operand and result types."""
    op, res = ("i8", "i32") if config.dtype == "int8" else ("f32", "f32")
    a, b, c = f"memref<{M}x{K}x{op}>", f"memref<{K}x{N}x{op}>", f"memref<{M}x{N}x{res}>"
    if op == "f32":
        body = f"  linalg.matmul ins(%A, %B : {a}, {b}) outs(%C : {c})\n"
    else:  # int8 x int8 -> int32 spelled out (xDSL 0.75 builds this body without the sign extensions)
        maps = ("[affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, "
                "affine_map<(d0, d1, d2) -> (d0, d1)>]")
        body = (f'  "linalg.matmul"(%A, %B, %C) <{{operandSegmentSizes = array<i32: 2, 1>, indexing_maps = {maps}}}> ({{\n'
                "  ^bb0(%a: i8, %b: i8, %c: i32):\n"
                "    %ae = arith.extsi %a : i8 to i32\n    %be = arith.extsi %b : i8 to i32\n"
                "    %p = arith.muli %ae, %be : i32\n    %s = arith.addi %c, %p : i32\n    linalg.yield %s : i32\n"
                f"  }}) : ({a}, {b}, {c}) -> ()\n")
    return f"func.func @matmul(%A: {a}, %B: {b}, %C: {c}) {{\n{body}  return\n}}\n"


def matmul_module(M: int, N: int, K: int, config: AccelConfig) -> Any:
    """`matmul_text` parsed into an xDSL module whose context knows the npu dialect."""
    return parse_module(matmul_text(M, N, K, config), [NPU])
