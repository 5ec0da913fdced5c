"""Where a test meets a student's npu code: the calls that must run where that code is, returning what a test checks.

Unit 04's exercises 5 and 6 are an xDSL op class and a function that writes into an xDSL builder; neither crosses
the grading boundary (infopt.grading.wire), so their tests call these instead. In a notebook each runs here; at
grading the student's class or function is a name in their kernel (a `StudentFunction`), and the call runs there
(`via`): what comes back is data (text, numbers, a module as MLIR text), and every comparison stays with the test.

    lower_matmul_with(emit_npu_schedule, M, N, K, config)      # a fresh linalg.matmul, lowered with `emit`
    build_matmul_op(NpuMatmul, sizes=(4, None, 4), tile=(8, 4, 4), dataflow="ws", dtype="i8")   # a report
    parse_with_op(NpuMatmul, text)                               # parsed with a dialect holding only that op
"""
from __future__ import annotations

from typing import Any, Sequence

from ...accel import AccelConfig
from .lower import Emit, lower_to_npu
from .source import matmul_module

OPERANDS = ("a_addr", "b_addr", "c_addr", "m", "n", "k", "acc")


def _remote(obj: Any) -> bool:
    return bool(getattr(obj, "__infopt_remote__", False))


def lower_matmul_with(emit: Emit, M: int, N: int, K: int, config: AccelConfig, tidy: bool = False) -> Any:
    """A fresh M x N x K `linalg.matmul` module (`matmul_module`) lowered to npu ops with `emit` (`lower_to_npu`,
    untidied by default, so the module holds what `emit` wrote)."""
    if _remote(emit):
        return emit.via("infopt.mlir.npu.probes:lower_matmul_with", M, N, K, config, tidy=tidy)
    return lower_to_npu(matmul_module(M, N, K, config), config, emit, tidy=tidy)


def parse_type(text: str) -> Any:
    """An xDSL type from its MLIR text ('i8', 'f32', 'index', ...)."""
    from xdsl.parser import Parser

    from ..xdsl_ir import context

    return Parser(context(), str(text)).parse_type()


def _values(sizes: Sequence[int | None], wrong_operand: int | None) -> list:
    """Seven distinct SSA values for a_addr, b_addr, c_addr, m, n, k, acc: the addresses 0, 64, 128, each size an
    `arith.constant` (None: computed, as a loop's `arith.minsi` is), acc an i1 constant; `wrong_operand` (a
    position) is an i32 constant instead."""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import IndexType, IntegerAttr

    def index(v: int):
        return arith.ConstantOp(IntegerAttr(int(v), IndexType())).result

    def size(v: int | None):
        return arith.MinSIOp(index(5), index(7)).result if v is None else index(v)

    values = [index(0), index(64), index(128), *(size(s) for s in sizes), arith.ConstantOp(IntegerAttr(1, 1)).result]
    if wrong_operand is not None:
        values[int(wrong_operand)] = arith.ConstantOp(IntegerAttr(3, 32)).result
    return values


def _error(err: BaseException) -> dict:
    from xdsl.utils.exceptions import VerifyException

    return {"type": type(err).__name__, "verify_exception": isinstance(err, VerifyException),
            "message": str(err)[:1000]}


def build_matmul_op(op_class: Any, sizes: Sequence[int | None] = (4, 4, 4), tile: Sequence[int] = (8, 4, 4),
                    dataflow: str = "ws", dtype: str = "i8", wrong_operand: int | None = None) -> dict:
    """Build `op_class(a_addr, b_addr, c_addr, m, n, k, acc, tile, dataflow, dtype)` on seven fresh SSA values
    (`_values`; `dtype` is a type's text) and verify it. A report, as data:
    `bases` (the class's MRO as "module:qualname"), `build_error` (None, or the constructor's error), and once built
    `name`, `operands` (for each operand, the position of the value given, -1 for none of them), `accessors` (the
    same for op.a_addr ... op.acc), `tile` (the tile property as MLIR text) and `verify` (None, or its error)."""
    if _remote(op_class):
        return op_class.via("infopt.mlir.npu.probes:build_matmul_op", list(sizes), list(tile), dataflow, dtype,
                            wrong_operand=wrong_operand)
    if not isinstance(op_class, type):
        return {"bases": None, "build_error": f"not a class but a {type(op_class).__name__}"}
    report: dict = {"bases": [f"{c.__module__}:{c.__qualname__}" for c in op_class.__mro__], "build_error": None}
    given = _values(sizes, wrong_operand)
    try:
        op = op_class(*given, tuple(int(t) for t in tile), dataflow, parse_type(dtype))
    except Exception as err:  # noqa: BLE001 (the student's constructor: its error is the report)
        report["build_error"] = f"{type(err).__name__}: {str(err)[:500]}"
        return report

    def position(value: Any) -> int:
        return next((i for i, g in enumerate(given) if g is value), -1)

    report["name"] = str(getattr(op, "name", ""))
    report["operands"] = [position(v) for v in getattr(op, "operands", ())]
    report["accessors"] = {name: position(getattr(op, name, None)) for name in OPERANDS}
    report["tile"] = str(getattr(op, "tile", None))
    try:
        op.verify()
        report["verify"] = None
    except Exception as err:  # noqa: BLE001 (what the student's verifier raised is the answer)
        report["verify"] = _error(err)
    return report


def parse_with_op(op_class: Any, text: str) -> dict:
    """Parse (and verify) MLIR `text` with a dialect "npu" holding `op_class` alone: `error` (None, or the parse or
    verify error) and `found` (how many parsed ops are instances of `op_class`)."""
    if _remote(op_class):
        return op_class.via("infopt.mlir.npu.probes:parse_with_op", text)
    from xdsl.ir import Dialect

    from ..xdsl_ir import parse_module

    try:
        module = parse_module(text, [Dialect("npu", [op_class], [])])
    except Exception as err:  # noqa: BLE001 (the student's op decides what parses)
        return {"error": _error(err), "found": 0}
    return {"error": None, "found": sum(isinstance(op, op_class) for op in module.walk())}
