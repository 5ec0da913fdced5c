"""The op registry: for every op, shape/dtype inference, a numpy reference implementation and its ONNX form.

Every op the IR knows is defined in ``infopt.ir.ops`` (standard ONNX ops and the infopt-only ops the passes
create, such as FusedConv), so the set of ops never depends on what was imported. Other layers add their own
facts about these ops in their own tables (codegen's lowerings, the widgets' view kinds); an op whose compute
needs a higher layer (AccelCall runs the accelerator simulator) is defined here and gets its compute from that
layer through ``register_compute``.

Ops follow ONNX semantics and attribute names. A node may be written in the form of any opset from 13 to the
newest onnx defines: between those opsets ONNX only added attributes and inputs (Split-18's ``num_outputs``,
Reduce*-18's ``axes`` input), so one definition reads them all; ``export`` rewrites a node for a target opset.

Shape-like inputs (Reshape's ``shape``, Slice's ``starts``...) must be known when types are inferred.
An op that needs them lists their positions in ``OpDef.const_inputs``; its ``infer`` is then called as
``infer(input_types, attrs, consts)`` where ``consts[i]`` is the VALUE of input i (a numpy array) when it
is a constant (an initializer, a Constant node, or a small computation on constants and static shapes,
see ``constant_value``), else None. Ops without ``const_inputs`` keep the two-argument ``infer``.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import RegistrationError, UnsupportedOpError
from ..facts import FactTable
from ..node import Node
from ..protocols import GraphLike
from ..types import TensorType

InferFn = Callable[..., list[TensorType]]
ComputeFn = Callable[[Sequence["np.ndarray | None"], dict[str, Any]], list[np.ndarray]]
ExportFn = Callable[[Node, GraphLike, int], list[Node]]
ImportFn = Callable[[Node, int], Node]

INFOPT_DOMAIN = "infopt"


@dataclass(frozen=True)
class OpDef:
    """What the IR knows about one op.

    ``infer(input_types, attrs)`` returns the output types (None stands for an absent optional input);
    ``compute(inputs, attrs)`` returns the outputs as numpy arrays. ``commutative`` lets CSE canonicalize
    input order; ``elementwise`` marks ops whose output element i depends only on input element i
    (after broadcasting), which fusion relies on. ``const_inputs`` lists the inputs whose values
    ``infer`` needs (it is then called as ``infer(types, attrs, consts)``); ``num_outputs`` bounds the
    output count for ops with optional trailing outputs (``infer`` returns them all; the node keeps a prefix).

    ONNX facts: ``domain`` is "" for a standard ONNX op and "infopt" for an op only infopt has (exported in the
    "infopt" domain, so a round trip keeps it); ``export(node, graph, opset)`` returns the nodes that write
    ``node`` at ``opset`` (a decomposition where the op does not exist yet, inputs moved to attributes...);
    None means the node is written as it is. ``onnx_import(node, opset)`` rewrites a node read at ``opset`` into
    the IR's form where that differs (an opset-13 Split without sizes gets ``num_outputs``). ``compute_from``
    names the package that registers the compute of an op defined here without one: until that package
    registers it, ``compute`` raises an UnsupportedOpError saying which package to import.
    """

    name: str
    infer: InferFn
    compute: ComputeFn | None
    num_inputs: tuple[int, int] = (1, 1)  # (min, max) count of inputs
    commutative: bool = False
    elementwise: bool = False
    doc: str = ""
    const_inputs: tuple[int, ...] = ()  # input positions whose values infer needs: infer(types, attrs, consts)
    num_outputs: tuple[int, int] | None = None  # (min, max) count of outputs; None: whatever infer returns
    domain: str = ""
    export: ExportFn | None = None
    onnx_import: ImportFn | None = None
    compute_from: str = ""

    def __post_init__(self) -> None:
        if self.compute is None:
            if not self.compute_from:
                raise RegistrationError(f"op {self.name}: give a compute, or compute_from naming the package that "
                                        "registers it")
            object.__setattr__(self, "compute", _missing_compute(self.name, self.compute_from, self.doc))

    @property
    def has_compute(self) -> bool:
        """False while the compute of a ``compute_from`` op has not been registered by its package."""
        return not getattr(self.compute, "missing_compute", False)


def _missing_compute(op: str, package: str, doc: str) -> ComputeFn:
    def compute(inputs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
        raise UnsupportedOpError(f"{op} computes in {package}{f' ({doc})' if doc else ''}: import {package} "
                                 f"first, it registers the compute of {op}")
    compute.missing_compute = True  # type: ignore[attr-defined]
    return compute


OPS: FactTable[OpDef] = FactTable("definition")


def register_op(opdef: OpDef, replace: bool = False) -> OpDef:
    """Add an op to the registry; a name already registered is an error unless ``replace=True``."""
    if not isinstance(opdef, OpDef):
        raise TypeError(f"register_op takes an OpDef, got {type(opdef).__name__}")
    return OPS.register(opdef.name, opdef, replace)


def register_compute(op: str, compute: ComputeFn, replace: bool = False) -> OpDef:
    """Give ``op`` (defined here with ``compute_from``) the compute its layer supplies; returns the new OpDef."""
    opdef = get_op(op)
    if not opdef.compute_from:
        raise RegistrationError(f"op {op} computes in infopt.ir.ops itself; its compute cannot be registered from "
                                "another layer (define a new op instead)")
    if opdef.has_compute and not replace:
        raise RegistrationError(f"op {op} already has a compute ({opdef.compute.__module__}."
                                f"{opdef.compute.__qualname__}); pass replace=True to override it on purpose")
    return OPS.register(op, dataclasses.replace(opdef, compute=compute), replace=True)


def register_export(op: str, export: ExportFn, replace: bool = False) -> OpDef:
    """Give ``op`` an ONNX exporter ``export(node, graph, opset) -> list[Node]`` (for example one that decomposes it
    into standard ops); an op that has one already needs ``replace=True``."""
    opdef = get_op(op)
    if opdef.export is not None and not replace:
        raise RegistrationError(f"op {op} already has an ONNX exporter ({opdef.export.__module__}."
                                f"{opdef.export.__qualname__}); pass replace=True to override it on purpose")
    return OPS.register(op, dataclasses.replace(opdef, export=export), replace=True)


def get_op(op: str, node: Node | None = None) -> OpDef:
    """The definition of ``op``, or an UnsupportedOpError naming it and the node."""
    try:
        return OPS[op]
    except KeyError:
        where = f" (node {node.label})" if node is not None else ""
        raise UnsupportedOpError(
            f"op {op!r}{where} is not in the infopt op registry; supported ops: {', '.join(sorted(OPS))}. "
            "Define it in infopt.ir.ops (register_op(OpDef(...))) or rewrite the model to avoid it."
        ) from None
