"""The emitter's state and its op table: how one graph node becomes lines of MLIR in the tensor dialects.

An emitter is a function `(ctx, node) -> None` that appends lines with `ctx.line(...)` and binds each of the
node's outputs to the SSA value holding it (`ctx.bind(output, ssa)`). Emitters are registered explicitly, one per
op name (`register_emitter`); `infopt.mlir.emit.default_emitters()` registers the course's set.
"""
from __future__ import annotations

import itertools
from typing import Callable

import numpy as np

from ..ir.graph import Graph, Node
from ..ir.types import TensorType
from .mlir_text import affine_map, dense_literal, element_type, float_literal, tensor_type


class MlirEmitError(ValueError):
    """A node the emitter cannot express in MLIR; the message names the node and its op."""


Emitter = Callable[["EmitContext", Node], None]
EMITTERS: dict[str, Emitter] = {}


def register_emitter(op: str, fn: Emitter, replace: bool = False) -> None:
    """Register `fn` as the MLIR emitter of graph op `op` (a second registration is an error unless `replace`)."""
    if op in EMITTERS and not replace and EMITTERS[op] is not fn:
        raise ValueError(f"an MLIR emitter for {op!r} is already registered ({EMITTERS[op].__name__}); "
                         "pass replace=True to override it")
    EMITTERS[op] = fn


class EmitContext:
    """The function being written: its lines, the SSA value of every graph value, fresh names, constants."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.lines: list[str] = []
        self.values: dict[str, str] = {}
        self._ids = itertools.count()
        self._scalars: dict[tuple[str, str], str] = {}
        self.params: set[str] = set()   # initializers passed as function arguments (not constants here)

    # ----- names and values --------------------------------------------------------------------------------
    def fresh(self, hint: str = "v") -> str:
        """A new SSA name, unique in the whole function (nested regions included)."""
        return f"%{hint}{next(self._ids)}"

    def line(self, text: str) -> None:
        """Append one line of the function body (indented under `func.func`)."""
        self.lines.append("  " + text)

    def bind(self, value: str, ssa: str) -> None:
        """Graph value `value` is held by SSA value `ssa` from now on."""
        self.values[value] = ssa

    def type_of(self, value: str) -> TensorType:
        """The static type of a graph value."""
        return self.graph.type_of(value)

    def ttype(self, value: str) -> str:
        """The MLIR tensor type of a graph value."""
        t = self.type_of(value)
        return tensor_type(t.shape, t.dtype)

    def get(self, value: str) -> str:
        """The SSA value holding graph value `value` (a constant initializer is materialised on first use)."""
        if value in self.values:
            return self.values[value]
        if value in self.graph.initializers:
            arr = np.asarray(self.graph.initializers[value])
            t = self.type_of(value)
            ssa = self.fresh("cst")
            self.line(f"{ssa} = arith.constant {dense_literal(arr, t.dtype)} : {tensor_type(t.shape, t.dtype)}")
            self.bind(value, ssa)
            return ssa
        raise MlirEmitError(f"value {value!r} is used before it is defined (is the graph topologically sorted?)")

    def constant_of(self, value: str) -> np.ndarray | None:
        """The array of a constant initializer, or None for a computed value."""
        v = self.graph.initializers.get(value)
        return None if v is None or value in self.params else np.asarray(v)

    def scalar(self, value: float, elem: str = "f32") -> str:
        """An `arith.constant` scalar (one per value per function)."""
        key = (float_literal(value, elem), elem)
        if key not in self._scalars:
            ssa = self.fresh("c")
            self.line(f"{ssa} = arith.constant {key[0]} : {elem}")
            self._scalars[key] = ssa
        return self._scalars[key]

    def array_constant(self, arr: np.ndarray, dtype: str = "f32") -> str:
        """A tensor constant from a numpy array (for weights the emitter rearranges, e.g. a transposed Gemm B)."""
        ssa = self.fresh("cst")
        self.line(f"{ssa} = arith.constant {dense_literal(arr, dtype)} : {tensor_type(arr.shape, dtype)}")
        return ssa

    # ----- building blocks ----------------------------------------------------------------------------------
    def filled(self, shape: tuple[int, ...], value: float, elem: str = "f32") -> str:
        """`tensor.empty` + `linalg.fill`: a tensor of `shape` holding `value` (an init for reductions and matmuls)."""
        t = tensor_type(shape, _dtype(elem))
        empty = self.fresh("empty")
        self.line(f"{empty} = tensor.empty() : {t}")
        out = self.fresh("fill")
        self.line(f"{out} = linalg.fill ins({self.scalar(value, elem)} : {elem}) outs({empty} : {t}) -> {t}")
        return out

    def empty(self, shape: tuple[int, ...], elem: str = "f32") -> str:
        """`tensor.empty` of a static shape (the init of an op that overwrites every element)."""
        out = self.fresh("empty")
        self.line(f"{out} = tensor.empty() : {tensor_type(shape, _dtype(elem))}")
        return out

    def generic(self, ins: list[tuple[str, tuple[int, ...], list[str]]], out_shape: tuple[int, ...],
                out_exprs: list[str], iterators: list[str], body: Callable[[list[str], str], list[str]],
                init: str | None = None, elem: str = "f32") -> str:
        """A `linalg.generic`: `ins` are (ssa, shape, map results), the output has `out_exprs`; `body(args, out)`
        returns the payload's lines, the last being the value to yield. `init` defaults to a `tensor.empty`."""
        n = len(iterators)
        maps = [affine_map(n, exprs) for _, _, exprs in ins] + [affine_map(n, out_exprs)]
        iters = ", ".join(f'"{it}"' for it in iterators)
        out_t = tensor_type(out_shape, _dtype(elem))
        init = init if init is not None else self.empty(out_shape, elem)
        res = self.fresh("gen")
        ins_part = ""
        if ins:
            ins_part = (f" ins({', '.join(s for s, _, _ in ins)} : "
                        f"{', '.join(tensor_type(shape, _dtype(elem)) for _, shape, _ in ins)})")
        self.line(f"{res} = linalg.generic {{indexing_maps = [{', '.join(maps)}], iterator_types = [{iters}]}}"
                  f"{ins_part} outs({init} : {out_t}) {{")
        args = [self.fresh("in") for _ in ins]
        out_arg = self.fresh("out")
        self.lines.append("  ^bb0(" + ", ".join(f"{a}: {elem}" for a in [*args, out_arg]) + "):")
        payload = body(args, out_arg)
        for text in payload[:-1]:
            self.line("  " + text)
        self.line(f"  linalg.yield {payload[-1]} : {elem}")
        self.line(f"}} -> {out_t}")
        return res


def _dtype(elem: str) -> str:
    """The infopt dtype name of an MLIR element type (inverse of mlir_text.element_type)."""
    return {"i1": "bool"}.get(elem, elem)


def float_elem(ctx: EmitContext, node: Node) -> str:
    """The element type of the node's first output, which must be a float (the emitter's payloads are float math)."""
    t = ctx.type_of(node.outputs[0])
    if t.dtype not in ("f32", "f64"):
        raise MlirEmitError(f"node {node.label}: op {node.op} on {t.dtype} values; the MLIR emitter handles float "
                            "tensors (f32, f64) only")
    return element_type(t.dtype)
