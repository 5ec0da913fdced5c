"""Lowering graph nodes to kernels: elementwise ops, fused elementwise chains, reductions, softmax.

Each lowering returns a ``Kernel`` whose buffers are the node's inputs (``in0, in1, ...``) then its
output (``out0``); ``infopt.codegen.compile_graph`` binds them to the graph's arrays. Elementwise
inputs broadcast numpy-style: a size-1 (or missing) dimension is indexed at 0. Each op's value is
assigned to a local scalar, so a fused chain computes every intermediate once, in registers.
"""
from __future__ import annotations

import itertools
import re
from typing import Any, Callable, Sequence

from ..ir.graph import Graph, Node
from ..ir.types import TensorType
from .expr import Buffer, Cast, Const, Expr, Var, call, cmp, maximum, minimum, select
from .kernel_ir import Assign, Kernel, Loop, Stmt, Store
from .lowerings import FLOATS, NUMBERS, lowering
from .mathfns import exp_stmts


class UnsupportedLoweringError(NotImplementedError):
    """A node the codegen cannot lower; the message names the node and the ops it can lower."""


def kernel_name(text: str) -> str:
    """A valid kernel (LLVM function) name from a node or graph name."""
    s = re.sub(r"\W", "_", text)
    return s if s and not s[0].isdigit() else "k_" + s


def buffers_for(in_types: Sequence[TensorType], out_types: Sequence[TensorType]) -> tuple[list[Buffer], list[Buffer]]:
    """Kernel buffers ``in0.. out0..`` for a node's input and output types."""
    ins = [Buffer(f"in{k}", t.shape, t.dtype, "in") for k, t in enumerate(in_types)]
    outs = [Buffer(f"out{k}", t.shape, t.dtype, "out") for k, t in enumerate(out_types)]
    return ins, outs


def broadcast_index(idx: Sequence[Expr], out_shape: Sequence[int], in_shape: Sequence[int]) -> tuple[Expr, ...]:
    """The index into an input of ``in_shape`` that numpy broadcasting reads for output index ``idx``."""
    off = len(out_shape) - len(in_shape)
    return tuple(Const(0, "i64") if d == 1 and out_shape[off + k] != 1 else idx[off + k] for k, d in enumerate(in_shape))


def loop_nest(shape: Sequence[int], prefix: str, inner: Callable[[list[Var]], list[Stmt]]) -> list[Stmt]:
    """Perfectly nested loops over ``shape`` (variables ``prefix0, prefix1, ...``) around ``inner(vars)``."""
    vs = [Var(f"{prefix}{d}") for d in range(len(shape))]
    body = inner(vs)
    for v, n in reversed(list(zip(vs, shape))):
        body = [Loop(v, 0, n, 1, tuple(body))]
    return body


class Scalars:
    """Fresh local-scalar names for one kernel."""

    def __init__(self) -> None:
        self.n = itertools.count()

    def new(self, dtype: str, hint: str = "t") -> Var:
        """A scalar variable not used yet."""
        return Var(f"{hint}{next(self.n)}", dtype)


def _exp(x: Expr, sc: Scalars) -> tuple[list[Stmt], Expr]:
    if x.dtype != "f32":
        return [], call("exp", x)
    out = sc.new("f32", "e")
    return exp_stmts(out, x), out


def ew_expr(op: str, args: Sequence[Expr], attrs: dict[str, Any], out_dtype: str, sc: Scalars,
            const_args: Sequence[Any] = ()) -> tuple[list[Stmt], Expr]:
    """Statements and the expression computing one elementwise op on scalar arguments."""
    x = args[0] if args else None
    if op == "Add":
        return [], args[0] + args[1]
    if op == "Sub":
        return [], args[0] - args[1]
    if op == "Mul":
        return [], args[0] * args[1]
    if op == "Div":
        return [], args[0] / args[1]
    if op in ("Max", "Min"):
        f = maximum if op == "Max" else minimum
        e = args[0]
        for a in args[1:]:
            e = f(e, a)
        return [], e
    if op == "Relu":
        return [], maximum(x, Const(0, x.dtype))
    if op == "Neg":
        return [], -x
    if op == "Identity":
        return [], x
    if op in ("Sqrt", "Log", "Abs"):
        return [], call(op.lower(), x)
    if op == "Exp":
        return _exp(x, sc)
    if op == "Sigmoid":
        st, e = _exp(-x, sc)
        return st, Const(1.0, x.dtype) / (e + 1.0)
    if op == "Tanh":  # tanh|x| = (1 - e^-2|x|) / (1 + e^-2|x|), sign restored; stable for large |x|
        st, e = _exp(call("abs", x) * -2.0, sc)
        t = (Const(1.0, x.dtype) - e) / (e + 1.0)
        return st, select(cmp("<", x, 0.0), -t, t)
    if op == "Clip":
        e = x
        if len(args) > 1 and args[1] is not None:
            e = maximum(e, args[1])
        elif "min" in attrs:
            e = maximum(e, float(attrs["min"]))
        if len(args) > 2 and args[2] is not None:
            e = minimum(e, args[2])
        elif "max" in attrs:
            e = minimum(e, float(attrs["max"]))
        return [], e
    if op == "Pow":
        c = const_args[1] if len(const_args) > 1 else None
        if c is not None and c.size == 1 and float(c.reshape(-1)[0]) == 2.0:
            return [], x * x
        if c is not None and c.size == 1 and float(c.reshape(-1)[0]) == 0.5:
            return [], call("sqrt", x)
        y = args[1] if args[1].dtype == x.dtype else Cast(x.dtype, args[1])
        return _exp(y * call("log", x), sc)
    if op == "Cast":
        return [], Cast(out_dtype, x)
    if op == "Gelu" and attrs.get("approximate", "none") == "tanh":
        inner = (x + x * x * x * 0.044715) * 0.7978845608028654
        st, t = ew_expr("Tanh", [inner], {}, out_dtype, sc)
        return st, x * 0.5 * (t + 1.0)
    raise UnsupportedLoweringError(
        f"elementwise op {op!r}{' with ' + str(attrs) if attrs else ''} has no kernel-IR lowering; "
        f"lowerable elementwise ops: {', '.join(ELEMENTWISE_OPS)}")


ELEMENTWISE_OPS = ("Add", "Sub", "Mul", "Div", "Max", "Min", "Relu", "Neg", "Identity", "Sqrt", "Log", "Abs", "Exp",
                   "Sigmoid", "Tanh", "Clip", "Pow", "Cast", "Gelu(approximate=tanh)")


def lower_program(name: str, steps: Sequence[dict[str, Any]], in_types: Sequence[TensorType],
                  out_type: TensorType, consts: Sequence[Any] = ()) -> Kernel:
    """One loop nest computing a chain of elementwise steps ``{op, args: ['i0','t0',...], attrs}`` (the last is the output)."""
    ins, outs = buffers_for(in_types, [out_type])
    consts = list(consts) + [None] * (len(in_types) - len(consts))

    def inner(idx: list[Var]) -> list[Stmt]:
        sc = Scalars()
        stmts: list[Stmt] = []
        vals: dict[str, Expr] = {}
        for k, b in enumerate(ins):
            vals[f"i{k}"] = b[broadcast_index(idx, out_type.shape, b.shape)]
        for s, step in enumerate(steps):
            args = [vals[a] if a else None for a in step["args"]]
            cargs = [consts[int(a[1:])] if a and a.startswith("i") else None for a in step["args"]]
            dt = out_type.dtype if s == len(steps) - 1 else next(a.dtype for a in args if a is not None)
            pre, e = ew_expr(step["op"], args, step.get("attrs", {}), dt, sc, cargs)
            v = sc.new(e.dtype, "v")
            stmts += pre + [Assign(v, e)]
            vals[f"t{s}"] = v
        return stmts + [Store(outs[0], tuple(idx), vals[f"t{len(steps) - 1}"])]

    return Kernel(kernel_name(name), tuple(ins + outs), tuple(loop_nest(out_type.shape, "i", inner)))


@lowering("Add", "Sub", "Mul", "Max", "Min", "Relu", "Neg", "Abs", "Clip", "Cast", dtypes=NUMBERS)
@lowering("Div", "Sqrt", "Log", "Exp", "Sigmoid", "Tanh", "Pow", "Gelu", dtypes=FLOATS)
def lower_elementwise(graph: Graph, node: Node) -> Kernel:
    """A kernel for one elementwise node (broadcasting its inputs to the output shape)."""
    present = [i for i in node.inputs if i]
    args = []
    for i in node.inputs:
        args.append(f"i{present.index(i)}" if i else "")
    step = {"op": node.op, "args": args, "attrs": node.attrs}
    return lower_program(node.label, [step], [graph.type_of(i) for i in present], graph.type_of(node.outputs[0]),
                         [graph.initializers.get(i) for i in present])


def fuse_elementwise_chain(graph: Graph, nodes: Sequence[Node], name: str | None = None) -> tuple[Kernel, list[str], str]:
    """One kernel for a chain of elementwise nodes; returns (kernel, input value names, output value name).

    Values produced inside the chain stay in registers; the chain's output is the last node's output.
    """
    produced = {o: k for k, n in enumerate(nodes) for o in n.outputs}
    ext: list[str] = []
    steps = []
    for k, n in enumerate(nodes):
        args = []
        for i in n.inputs:
            if not i:
                args.append("")
            elif i in produced and produced[i] < k:
                args.append(f"t{produced[i]}")
            else:
                if i not in ext:
                    ext.append(i)
                args.append(f"i{ext.index(i)}")
        steps.append({"op": n.op, "args": args, "attrs": n.attrs})
    out = nodes[-1].outputs[0]
    kern = lower_program(name or "fused_" + "_".join(n.op.lower() for n in nodes), steps,
                         [graph.type_of(i) for i in ext], graph.type_of(out), [graph.initializers.get(i) for i in ext])
    return kern, ext, out


@lowering("FusedElementwise", dtypes=FLOATS)
def lower_fused_node(graph: Graph, node: Node) -> Kernel:
    """A kernel for unit 02's ``FusedElementwise`` node: its whole program as one loop nest."""
    from ..ir.ops.fused import decode_program

    present = [i for i in node.inputs if i]
    return lower_program(node.label, decode_program(node.attrs), [graph.type_of(i) for i in present],
                         graph.type_of(node.outputs[0]), [graph.initializers.get(i) for i in present])


@lowering("ReduceSum", "ReduceMax", "ReduceMean", dtypes=FLOATS)
def lower_reduce(graph: Graph, node: Node) -> Kernel:
    """ReduceSum / ReduceMax / ReduceMean over axes (attribute or constant input), keepdims."""
    from ..ir.ops.reduce import reduce_axes

    x, y = graph.type_of(node.inputs[0]), graph.type_of(node.outputs[0])
    axes_val = graph.initializers.get(node.inputs[1]) if len(node.inputs) > 1 and node.inputs[1] else None
    axes = reduce_axes(node.op, x.rank, node.attrs, axes_val)
    keep = int(node.attrs.get("keepdims", 1))
    ins, outs = buffers_for([x], [y])
    kept = [d for d in range(x.rank) if d not in axes]
    acc = Var("acc", x.dtype)
    is_max = node.op == "ReduceMax"
    init = Const(float("-inf"), x.dtype) if is_max else Const(0, x.dtype)
    count = 1
    for a in axes:
        count *= x.shape[a]

    def outer(ov: list[Var]) -> list[Stmt]:
        full: list[Expr] = [Const(0, "i64")] * x.rank
        for d, v in zip(kept, ov):
            full[d] = v

        def red(rv: list[Var]) -> list[Stmt]:
            ix = list(full)
            for d, v in zip(axes, rv):
                ix[d] = v
            val = ins[0][tuple(ix)]
            return [Assign(acc, maximum(acc, val) if is_max else acc + val)]

        res: Expr = acc * (1.0 / count) if node.op == "ReduceMean" else acc
        oidx = [Const(0, "i64") if d in axes else full[d] for d in range(x.rank)] if keep else list(ov)
        return [Assign(acc, init)] + loop_nest([x.shape[a] for a in axes], "r", red) + [Store(outs[0], tuple(oidx), res)]

    if node.op not in ("ReduceSum", "ReduceMax", "ReduceMean"):
        raise UnsupportedLoweringError(f"node {node.label}: {node.op} has no lowering (ReduceSum/Max/Mean do)")
    body = loop_nest([x.shape[d] for d in kept], "i", outer)
    return Kernel(kernel_name(node.label), tuple(ins + outs), tuple(body), fastmath=True)


def softmax_kernel(name: str, shape: Sequence[int], axis: int = -1, dtype: str = "f32") -> Kernel:
    """Softmax along ``axis``: a max pass, an exp-and-sum pass (vectorizable exp), a scale pass."""
    shape = tuple(shape)
    axis = axis % len(shape)
    X, Y = Buffer("in0", shape, dtype, "in"), Buffer("out0", shape, dtype, "out")
    n = shape[axis]
    others = [d for d in range(len(shape)) if d != axis]
    m, s, inv = Var("m", dtype), Var("s", dtype), Var("inv", dtype)
    c = Var("c")

    def rows(ov: list[Var]) -> list[Stmt]:
        def at(v: Expr) -> tuple[Expr, ...]:
            ix: list[Expr] = [Const(0, "i64")] * len(shape)
            for d, o in zip(others, ov):
                ix[d] = o
            ix[axis] = v
            return tuple(ix)

        sc = Scalars()
        pre, e = _exp(X[at(c)] - m, sc)
        return [
            Assign(m, Const(float("-inf"), dtype)),
            Loop(c, 0, n, 1, (Assign(m, maximum(m, X[at(c)])),)),
            Assign(s, Const(0.0, dtype)),
            Loop(Var("c2"), 0, n, 1, tuple(_rename(pre + [Store(Y, at(c), e), Assign(s, s + e)], "c", "c2"))),
            Assign(inv, Const(1.0, dtype) / s),
            Loop(Var("c3"), 0, n, 1, tuple(_rename([Store(Y, at(c), Y[at(c)] * inv)], "c", "c3"))),
        ]

    body = loop_nest([shape[d] for d in others], "i", rows)
    return Kernel(kernel_name(name), (X, Y), tuple(body), fastmath=True)


def _rename(stmts: list[Stmt], old: str, new: str) -> list[Stmt]:
    from .walk import substitute_stmt

    return [substitute_stmt(s, {old: Var(new)}) for s in stmts]


@lowering("Softmax", dtypes=FLOATS)
def lower_softmax(graph: Graph, node: Node) -> Kernel:
    """ONNX Softmax (opset 13: along one axis, default -1)."""
    x = graph.type_of(node.inputs[0])
    return softmax_kernel(node.label, x.shape, int(node.attrs.get("axis", -1)), x.dtype)
