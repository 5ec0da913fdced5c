"""Data-movement ops: Reshape, Flatten, Transpose, Concat, Split, Squeeze/Unsqueeze, Slice, Gather, Expand,
Shape, Size, Identity, Dropout (inference), Constant and ConstantOfShape."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..errors import GraphError
from ..node import Node
from ..protocols import GraphLike
from ..types import TensorType
from .common import broadcast_shapes, constant_node, ints, need_const, norm_axis, same_dtype
from .registry import OpDef, register_op


def _identity_infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
    return [types[0]]


register_op(OpDef("Identity", _identity_infer, lambda xs, a: [xs[0]], (1, 1), elementwise=True, doc="y = x"))


DROPOUT_TRAINING = ("Dropout: training_mode=True is not supported: the infopt IR runs inference only (output = "
                    "data). Export the model in eval mode, or set training_mode to false")


def _dropout_infer(types: Sequence[TensorType | None], attrs: dict[str, Any], consts: list) -> list[TensorType]:
    x = types[0]
    if len(types) > 2 and types[2] is not None:
        mode = need_const("Dropout", consts, 2, "training_mode")
        if bool(np.asarray(mode)):
            raise GraphError(DROPOUT_TRAINING)
    return [x, TensorType(x.shape, "bool", x.layout)]


def _dropout(xs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    if len(xs) > 2 and xs[2] is not None and bool(np.asarray(xs[2])):
        raise GraphError(DROPOUT_TRAINING)
    return [xs[0], np.ones(xs[0].shape, dtype=bool)]


register_op(OpDef("Dropout", _dropout_infer, _dropout, (1, 3), num_outputs=(1, 2), const_inputs=(2,),
                  doc="inference: output = data, mask = all True"))


# ----- Constant -----------------------------------------------------------------------------
def constant_attr_value(attrs: dict[str, Any]) -> np.ndarray:
    """The tensor a Constant node holds (attribute value, value_float(s) or value_int(s))."""
    for k in ("value_string", "value_strings", "sparse_value"):
        if k in attrs:
            raise GraphError(f"Constant: attribute {k} is not supported (the IR holds dense numeric tensors only); "
                             "use value, value_float(s) or value_int(s)")
    given = [k for k in ("value", "value_float", "value_floats", "value_int", "value_ints") if k in attrs]
    if len(given) != 1:
        raise GraphError(f"Constant: needs exactly one of value, value_float(s), value_int(s); got {given or 'none'}")
    k = given[0]
    v = attrs[k]
    if k == "value":
        return np.asarray(v)
    return np.asarray(v, dtype=np.float32 if "float" in k else np.int64)


register_op(OpDef(
    "Constant", lambda types, attrs: [TensorType.of(constant_attr_value(attrs))],
    lambda xs, a: [constant_attr_value(a)], (0, 0), doc="a tensor held in the 'value' attribute"))


# ----- Reshape / Flatten / Transpose ---------------------------------------------------------
def reshape_shape(in_shape: Sequence[int], shape: Sequence[int], allowzero: bool = False) -> tuple[int, ...]:
    """ONNX Reshape's target: 0 copies the input dim (unless allowzero), one -1 is inferred."""
    shape = [int(s) for s in shape]
    out = []
    for k, s in enumerate(shape):
        if s == 0 and not allowzero:
            if k >= len(in_shape):
                raise GraphError(f"Reshape: shape {shape} has 0 at position {k} but the input {tuple(in_shape)} "
                                 f"has only {len(in_shape)} dims to copy from")
            s = in_shape[k]
        out.append(s)
    total = math.prod(in_shape)
    if out.count(-1) > 1:
        raise GraphError(f"Reshape: shape {shape} has more than one -1")
    if any(s < -1 for s in out):
        raise GraphError(f"Reshape: shape {shape} has a negative entry other than -1")
    if -1 in out:
        known = math.prod(s for s in out if s != -1)
        if known == 0 or total % known:
            raise GraphError(f"Reshape: cannot infer the -1 in {shape}: {total} elements of input "
                             f"{tuple(in_shape)} do not divide by {known}")
        out[out.index(-1)] = total // known
    if math.prod(out) != total:
        raise GraphError(f"Reshape: cannot reshape {tuple(in_shape)} ({total} elements) to {tuple(out)} "
                         f"({math.prod(out)} elements)")
    return tuple(out)


def _reshape_infer(types: Sequence[TensorType | None], attrs: dict[str, Any], consts: list) -> list[TensorType]:
    shape = need_const("Reshape", consts, 1, "shape")
    return [TensorType(reshape_shape(types[0].shape, ints(shape), bool(attrs.get("allowzero", 0))), types[0].dtype)]


register_op(OpDef(
    "Reshape", _reshape_infer,
    lambda xs, a: [xs[0].reshape(reshape_shape(xs[0].shape, ints(xs[1]), bool(a.get("allowzero", 0))))],
    (2, 2), const_inputs=(1,), doc="reshape to a constant shape (0 copies a dim, -1 is inferred)"))


def _flatten_shape(shape: tuple[int, ...], attrs: dict[str, Any]) -> tuple[int, int]:
    axis = int(attrs.get("axis", 1))
    if not -len(shape) <= axis <= len(shape):
        raise GraphError(f"Flatten: axis {axis} out of range for a rank-{len(shape)} input")
    axis = axis + len(shape) if axis < 0 else axis
    return (math.prod(shape[:axis]), math.prod(shape[axis:]))


register_op(OpDef(
    "Flatten", lambda t, a: [TensorType(_flatten_shape(t[0].shape, a), t[0].dtype)],
    lambda xs, a: [xs[0].reshape(_flatten_shape(xs[0].shape, a))], (1, 1),
    doc="to 2-D: (prod(dims before axis), prod(dims from axis))"))

_LAYOUT_PERMS = {("NCHW", (0, 2, 3, 1)): "NHWC", ("NHWC", (0, 3, 1, 2)): "NCHW"}


def _perm(rank: int, attrs: dict[str, Any]) -> tuple[int, ...]:
    perm = tuple(ints(attrs["perm"])) if "perm" in attrs else tuple(range(rank))[::-1]
    if sorted(perm) != list(range(rank)):
        raise GraphError(f"Transpose: perm {list(perm)} is not a permutation of 0..{rank - 1}")
    return perm


def _transpose_infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
    x = types[0]
    perm = _perm(x.rank, attrs)
    layout = _LAYOUT_PERMS.get((x.layout, perm)) if x.layout else None
    return [TensorType(tuple(x.shape[p] for p in perm), x.dtype, layout)]


register_op(OpDef("Transpose", _transpose_infer, lambda xs, a: [np.transpose(xs[0], _perm(xs[0].ndim, a))],
                  (1, 1), doc="permute dims (default: reverse); NCHW->NHWC by perm [0,2,3,1] retags the layout"))


# ----- Concat --------------------------------------------------------------------------------
def _concat_infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
    if "axis" not in attrs:
        raise GraphError("Concat: attribute axis is required")
    dt = same_dtype("Concat", types)
    first = types[0]
    axis = norm_axis("Concat", attrs["axis"], first.rank)
    for k, t in enumerate(types[1:], 1):
        if t.rank != first.rank or any(a != b for d, (a, b) in enumerate(zip(t.shape, first.shape)) if d != axis):
            raise GraphError(f"Concat: input {k} has shape {t.shape} but input 0 has {first.shape}; they may "
                             f"differ only in dim {axis}")
    shape = list(first.shape)
    shape[axis] = sum(t.shape[axis] for t in types)
    layouts = {t.layout for t in types}
    return [TensorType(tuple(shape), dt, layouts.pop() if len(layouts) == 1 else None)]


register_op(OpDef("Concat", _concat_infer, lambda xs, a: [np.concatenate(xs, axis=int(a["axis"]))],
                  (1, 1 << 30), doc="join along an existing axis"))


# ----- Split ---------------------------------------------------------------------------------
def split_sizes(x: TensorType, attrs: dict[str, Any], split: np.ndarray | None) -> tuple[int, list[int]]:
    """(axis, part sizes) of a Split: from the ``split`` input, else ``num_outputs`` parts of ceil(dim / n) with the
    last one smaller (opset 18; an opset-13 Split without sizes is read as num_outputs = its output count)."""
    axis = norm_axis("Split", attrs.get("axis", 0), x.rank)
    dim = x.shape[axis]
    if split is not None:
        sizes = ints(split)
        if min(sizes, default=0) < 0 or sum(sizes) != dim:
            raise GraphError(f"Split: sizes {sizes} must be non-negative and add up to dim {axis} of {x} ({dim})")
        return axis, sizes
    if "num_outputs" not in attrs:
        raise GraphError("Split: give the part sizes as input 1 (`split`, a constant int64 tensor) or the number of "
                         "parts as attribute num_outputs")
    n = int(attrs["num_outputs"])
    if n < 1:
        raise GraphError(f"Split: num_outputs must be >= 1, got {n}")
    chunk = -(-dim // n)
    return axis, [max(0, min(chunk, dim - k * chunk)) for k in range(n)]


def _split_input(values: Sequence[Any], types: Sequence[Any]) -> np.ndarray | None:
    if len(types) > 1 and types[1] is not None:
        return need_const("Split", values, 1, "split")
    return None


def _split_infer(types: Sequence[TensorType | None], attrs: dict[str, Any],
                 consts: Sequence[np.ndarray | None]) -> list[TensorType]:
    x = types[0]
    axis, sizes = split_sizes(x, attrs, _split_input(consts, types))
    return [TensorType(tuple(k if d == axis else n for d, n in enumerate(x.shape)), x.dtype, x.layout) for k in sizes]


def _split(xs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    x = np.asarray(xs[0])
    axis, sizes = split_sizes(TensorType.of(x), attrs, _split_input(xs, xs))
    return [np.ascontiguousarray(p) for p in np.split(x, np.cumsum(sizes)[:-1], axis=axis)]


def _import_split(node: Node, opset: int) -> Node:
    """An opset-13..17 Split without sizes cuts into one equal part per output: num_outputs in the IR's form."""
    if (len(node.inputs) < 2 or not node.inputs[1]) and "num_outputs" not in node.attrs:
        node.attrs["num_outputs"] = len(node.outputs)
    return node


def _export_split(node: Node, graph: GraphLike, opset: int) -> list[Node]:
    """num_outputs exists from opset 18; before it an even split drops it and an uneven one gets a split input."""
    if opset >= 18 or "num_outputs" not in node.attrs or (len(node.inputs) > 1 and node.inputs[1]):
        return [node]
    x = graph.type_of(node.inputs[0])
    axis, sizes = split_sizes(x, node.attrs, None)
    attrs = {k: v for k, v in node.attrs.items() if k != "num_outputs"}
    if len(set(sizes)) == 1:
        return [Node("Split", node.inputs[:1], list(node.outputs), attrs, node.name)]
    name, const = constant_node(graph, np.array(sizes, np.int64), f"{node.name}_split")
    return [const, Node("Split", [node.inputs[0], name], list(node.outputs), attrs, node.name)]


register_op(OpDef("Split", _split_infer, _split, (1, 2), const_inputs=(1,), onnx_import=_import_split,
                  export=_export_split,
                  doc="cut along 'axis' into parts: the sizes in input 1, or num_outputs near-equal parts"))


# ----- Squeeze / Unsqueeze --------------------------------------------------------------------
def _axes_arg(op: str, values: Sequence[Any], attrs: dict[str, Any]) -> list[int] | None:
    """Axes from input 1 (opset >= 13; a value, or None when absent) or the 'axes' attribute (older)."""
    if len(values) > 1 and values[1] is not None:
        return ints(values[1])
    if "axes" in attrs:
        return ints(attrs["axes"])
    return None


def unsqueeze_shape(shape: Sequence[int], axes: Sequence[int]) -> tuple[int, ...]:
    """The shape after inserting size-1 dims at ``axes`` (positions in the output)."""
    rank = len(shape) + len(axes)
    pos = [norm_axis("Unsqueeze", a, rank) for a in axes]
    if len(set(pos)) != len(pos):
        raise GraphError(f"Unsqueeze: repeated axis in {list(axes)}")
    it = iter(shape)
    return tuple(1 if k in pos else next(it) for k in range(rank))


def squeeze_shape(shape: Sequence[int], axes: Sequence[int] | None) -> tuple[int, ...]:
    """The shape after removing the size-1 dims at ``axes`` (all size-1 dims when None)."""
    if axes is None:
        return tuple(d for d in shape if d != 1)
    pos = [norm_axis("Squeeze", a, len(shape)) for a in axes]
    for a in pos:
        if shape[a] != 1:
            raise GraphError(f"Squeeze: dim {a} of shape {tuple(shape)} has size {shape[a]}, not 1")
    return tuple(d for k, d in enumerate(shape) if k not in pos)


def _unsqueeze_infer(types: Sequence[TensorType | None], attrs: dict[str, Any], consts: list) -> list[TensorType]:
    if len(types) > 1 and types[1] is not None:
        need_const("Unsqueeze", consts, 1, "axes")
    axes = _axes_arg("Unsqueeze", consts, attrs)
    if axes is None:
        raise GraphError("Unsqueeze: axes must be given as a constant input (or attribute 'axes' before opset 13)")
    return [TensorType(unsqueeze_shape(types[0].shape, axes), types[0].dtype)]


def _squeeze_infer(types: Sequence[TensorType | None], attrs: dict[str, Any], consts: list) -> list[TensorType]:
    if len(types) > 1 and types[1] is not None:
        need_const("Squeeze", consts, 1, "axes")
    return [TensorType(squeeze_shape(types[0].shape, _axes_arg("Squeeze", consts, attrs)), types[0].dtype)]


register_op(OpDef(
    "Unsqueeze", _unsqueeze_infer,
    lambda xs, a: [xs[0].reshape(unsqueeze_shape(xs[0].shape, _axes_arg("Unsqueeze", xs, a)))],
    (1, 2), const_inputs=(1,), doc="insert size-1 dims at the given axes (of the output)"))
register_op(OpDef(
    "Squeeze", _squeeze_infer,
    lambda xs, a: [xs[0].reshape(squeeze_shape(xs[0].shape, _axes_arg("Squeeze", xs, a)))],
    (1, 2), const_inputs=(1,), doc="remove size-1 dims (the given axes, or all)"))


# ----- Shape / Gather / Slice ----------------------------------------------------------------
def _shape_slice(rank: int, attrs: dict[str, Any]) -> slice:
    return slice(attrs.get("start", 0), attrs.get("end", None))


def _export_shape(node: Node, graph: GraphLike, opset: int) -> list[Node]:
    """start/end exist from opset 15; before it, the whole shape then a Slice."""
    if opset >= 15 or not ({"start", "end"} & set(node.attrs)):
        return [node]
    rank = graph.type_of(node.inputs[0]).rank
    sl = _shape_slice(rank, node.attrs)
    start, stop, _ = sl.indices(rank)
    full = graph.fresh_name(f"{node.name}_full")
    s_name, s_node = constant_node(graph, np.array([start], np.int64), f"{node.name}_start")
    e_name, e_node = constant_node(graph, np.array([max(stop, start)], np.int64), f"{node.name}_end")
    return [Node("Shape", node.inputs[:1], [full], {}, node.name), s_node, e_node,
            Node("Slice", [full, s_name, e_name], list(node.outputs), {}, graph.fresh_name(f"{node.name}_slice"))]


register_op(OpDef(
    "Shape", lambda t, a: [TensorType((len(range(rank := t[0].rank)[_shape_slice(rank, a)]),), "i64")],
    lambda xs, a: [np.array(xs[0].shape, dtype=np.int64)[_shape_slice(xs[0].ndim, a)]], (1, 1),
    export=_export_shape, doc="the input's shape as an i64 vector (start/end attrs select a part)"))
register_op(OpDef(
    "Size", lambda t, a: [TensorType((), "i64")], lambda xs, a: [np.array(xs[0].size, dtype=np.int64)], (1, 1),
    doc="the input's element count as an i64 scalar"))


def _gather_infer(types: Sequence[TensorType | None], attrs: dict[str, Any]) -> list[TensorType]:
    data, idx = types
    if idx.dtype not in ("i32", "i64"):
        raise GraphError(f"Gather: indices must be i32 or i64, got {idx.dtype}")
    axis = norm_axis("Gather", attrs.get("axis", 0), data.rank)
    return [TensorType(data.shape[:axis] + idx.shape + data.shape[axis + 1:], data.dtype)]


def _gather(xs: Sequence[np.ndarray], attrs: dict[str, Any]) -> list[np.ndarray]:
    data, idx = xs
    axis = norm_axis("Gather", attrs.get("axis", 0), data.ndim)
    n = data.shape[axis]
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise IndexError(f"Gather: index out of range [-{n}, {n - 1}] on axis {axis}: {idx.min()}..{idx.max()}")
    return [np.take(data, np.where(idx < 0, idx + n, idx), axis=axis)]


register_op(OpDef("Gather", _gather_infer, _gather, (2, 2), doc="take entries along 'axis' (negative indices wrap)"))


def slice_ranges(shape: Sequence[int], starts: Sequence[int], ends: Sequence[int], axes: Sequence[int] | None,
                 steps: Sequence[int] | None) -> tuple[slice, ...]:
    """ONNX Slice's clamping rules as one Python slice per dim."""
    rank = len(shape)
    axes = list(range(len(starts))) if axes is None else [norm_axis("Slice", a, rank) for a in axes]
    steps = [1] * len(starts) if steps is None else list(steps)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise GraphError(f"Slice: starts {list(starts)}, ends {list(ends)}, axes {axes} and steps {steps} "
                         "must have the same length")
    if len(set(axes)) != len(axes):
        raise GraphError(f"Slice: repeated axis in {axes}")
    out = [slice(None)] * rank
    for s, e, a, st in zip(starts, ends, axes, steps):
        d = shape[a]
        if st == 0:
            raise GraphError(f"Slice: step 0 on axis {a}")
        s = s + d if s < 0 else s
        e = e + d if e < 0 else e
        if st > 0:
            s, e = min(max(s, 0), d), min(max(e, 0), d)
        else:
            s, e = min(max(s, 0), d - 1), min(max(e, -1), d - 1)
        out[a] = slice(s, None if e < 0 else e, st)
    return tuple(out)


def _slice_args(vals: Sequence[Any]) -> tuple:
    get = lambda k: ints(vals[k]) if len(vals) > k and vals[k] is not None else None  # noqa: E731
    return get(1), get(2), get(3), get(4)


def _slice_infer(types: Sequence[TensorType | None], attrs: dict[str, Any], consts: list) -> list[TensorType]:
    for k, what in ((1, "starts"), (2, "ends"), (3, "axes"), (4, "steps")):
        if k < len(types) and types[k] is not None:
            need_const("Slice", consts, k, what)
    x = types[0]
    starts, ends, axes, steps = _slice_args(consts)
    sl = slice_ranges(x.shape, starts, ends, axes, steps)
    return [TensorType(tuple(len(range(d)[s]) for d, s in zip(x.shape, sl)), x.dtype)]


def _slice(xs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    starts, ends, axes, steps = _slice_args(xs)
    return [np.ascontiguousarray(xs[0][slice_ranges(xs[0].shape, starts, ends, axes, steps)])]


register_op(OpDef("Slice", _slice_infer, _slice, (3, 5), const_inputs=(1, 2, 3, 4),
                  doc="data[starts:ends:steps] on the given axes (constant inputs, ONNX clamping)"))


# ----- Expand / ConstantOfShape ---------------------------------------------------------------------
def _shape_arg(op: str, types: Sequence[TensorType | None], consts: Sequence[Any]) -> list[int]:
    shape = ints(need_const(op, consts, 1 if op == "Expand" else 0, "shape"))
    if any(d < 0 for d in shape):
        raise GraphError(f"{op}: shape {shape} has a negative dimension")
    return shape


def _expand_infer(types: Sequence[TensorType | None], attrs: dict[str, Any], consts: list) -> list[TensorType]:
    x = types[0]
    out = broadcast_shapes("Expand", x.shape, _shape_arg("Expand", types, consts))
    return [TensorType(out, x.dtype, x.layout if out == x.shape else None)]


def _expand(xs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    x = xs[0]
    out = broadcast_shapes("Expand", x.shape, ints(xs[1]))
    return [np.ascontiguousarray(np.broadcast_to(x, out))]


register_op(OpDef("Expand", _expand_infer, _expand, (2, 2), const_inputs=(1,),
                  doc="broadcast the input to a shape (numpy rules: the result may be larger than the shape)"))


def _fill_value(attrs: dict[str, Any]) -> np.ndarray:
    v = attrs.get("value")
    if v is None:
        return np.zeros((), np.float32)
    v = np.asarray(v)
    if v.size != 1:
        raise GraphError(f"ConstantOfShape: value must hold one element, got shape {v.shape}")
    TensorType.of(v)  # an IR dtype
    return v.reshape(())


def _cos_infer(types: Sequence[TensorType | None], attrs: dict[str, Any], consts: list) -> list[TensorType]:
    return [TensorType(tuple(_shape_arg("ConstantOfShape", types, consts)), TensorType.of(_fill_value(attrs)).dtype)]


register_op(OpDef(
    "ConstantOfShape", _cos_infer, lambda xs, a: [np.full(ints(xs[0]), _fill_value(a))], (1, 1), const_inputs=(0,),
    doc="a tensor of the shape given by input 0, filled with attribute value (default 0.0 f32)"))
