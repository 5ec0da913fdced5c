"""Bufferization, small enough to see whole: which tensor writes may reuse their destination's buffer.

Tensors are values; memory is buffers. An op with a destination (`linalg.fill ... outs(%t)`, `tensor.insert %v into
%t[...]`, `linalg.generic ... outs(%t)`) computes a new tensor "like %t but changed". Bufferization decides, per such
op, whether it writes *in place* into %t's buffer (free) or into a new buffer (an allocation, and a copy of %t when
%t's contents are needed). In place is wrong when %t is still needed afterwards, or when %t's buffer belongs to the
caller and may not be written. `mlir-opt --one-shot-bufferize=test-analysis-only` prints its decisions as
`__inplace_operands_attr__`; `mlir_decisions` reads them.

Programs here are one `func.func` over `tensor<Nxf32>` values with `tensor.empty`, `linalg.fill`, `tensor.insert`,
`tensor.extract`, elementwise `linalg.generic`, `arith` scalars and `func.return`. `run_values` runs one with value
semantics; `run_buffers` runs it with buffers, following a list of decisions, so a wrong decision shows as a wrong
result or a changed input.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

DEST_OPS = ("linalg.fill", "tensor.insert", "linalg.generic")


def destination(op: Any) -> Any | None:
    """The destination operand of an op that writes into one (fill/generic: its `outs`; insert: `dest`), else None."""
    if op.name in ("linalg.fill", "linalg.generic"):
        return op.outputs[0]
    if op.name == "tensor.insert":
        return op.dest
    return None


def is_writable_argument(func: Any, value: Any) -> bool:
    """Is `value` an argument of `func` whose buffer the function may write? (Writable unless the argument carries
    `bufferization.writable = false`.) False for values that are not arguments of `func`."""
    from xdsl.ir import BlockArgument

    if not isinstance(value, BlockArgument) or value.owner is not func.body.block:
        return False
    attrs = func.arg_attrs.data[value.index].data if func.arg_attrs is not None else {}
    flag = attrs.get("bufferization.writable")
    return flag is None or bool(flag.value.data)


def dest_ops(func: Any) -> list[Any]:
    """The ops of `func` that have a destination, in program order (what a decision list is indexed by)."""
    return [op for op in func.body.block.ops if destination(op) is not None]


def reads(use: Any) -> bool:
    """Does this use read the tensor's contents? Extracts, an insert's destination (the other elements are kept),
    a generic's inputs and the return do; a fill's and an elementwise generic's `outs` only overwrite."""
    op = use.operation
    if op.name == "linalg.fill":
        return False
    if op.name == "linalg.generic":
        n_in = len(op.inputs)
        if use.index < n_in:
            return True
        arg = op.body.block.args[use.index]
        return bool(arg.uses)          # an `outs` operand is read only if the payload uses it
    return True


def reference_decisions(func: Any) -> list[bool]:
    """In place, per destination op in program order: not when the destination's buffer is a read-only argument's,
    and not when a value living in that buffer is read after the op; else in place (so the buffer is shared)."""
    ops = list(func.body.block.ops)
    order = {op: k for k, op in enumerate(ops)}
    buffer: dict = {}                            # SSA value -> buffer id
    for a in func.body.block.args:
        buffer[a] = ("arg", a.index)
    out = []
    for op in ops:
        t = destination(op)
        if t is None:
            for r in op.results:
                buffer[r] = ("op", order[op])
            continue
        b = buffer[t]
        read_only = b[0] == "arg" and not is_writable_argument(func, func.body.block.args[b[1]])
        sharers = [v for v, vb in buffer.items() if vb == b]
        read_later = any(reads(u) and order.get(u.operation, -1) > order[op] for v in sharers for u in v.uses)
        inplace = not read_only and not read_later
        buffer[op.results[0]] = b if inplace else ("op", order[op])
        out.append(inplace)
    return out


def mlir_decisions(text: str) -> list[bool]:
    """mlir-opt's one-shot bufferization decisions for the destination ops of `text`, in program order."""
    from .tools import mlir_opt

    annotated = mlir_opt(text, "--one-shot-bufferize=test-analysis-only bufferize-function-boundaries")
    out = []
    for line in annotated.splitlines():
        m = re.search(r"= (linalg\.fill|tensor\.insert|linalg\.generic)\b.*__inplace_operands_attr__ = \[([^\]]*)\]",
                      line)
        if m:
            flags = [f.strip().strip('"') for f in m.group(2).split(",")]
            out.append(flags[-1] == "true" if m.group(1) != "tensor.insert" else flags[1] == "true")
    return out


# ----- running a program ------------------------------------------------------------------------------------
@dataclass
class Buffer:
    """A buffer: its array and whether it belongs to the caller (an argument's)."""

    data: np.ndarray
    owner: str


@dataclass
class BufferedRun:
    """What a run with buffers produced: results, the caller's arrays after the call, allocations made."""

    results: list
    arguments: list
    allocations: int


def _run(func: Any, inputs: Sequence[np.ndarray], decisions: Sequence[bool] | None) -> tuple[list, list, int]:
    """The interpreter behind run_values (decisions None: every op makes a new tensor) and run_buffers."""
    block = func.body.block
    if len(inputs) != len(block.args):
        raise ValueError(f"the function takes {len(block.args)} tensors, got {len(inputs)}")
    env: dict = {}
    args = []
    for a, x in zip(block.args, inputs):
        buf = Buffer(np.array(x, dtype=np.float32, copy=True), "caller")
        args.append(buf)
        env[a] = buf
    flags = iter(decisions) if decisions is not None else None
    allocations = 0
    for op in block.ops:
        name = op.name
        if name == "arith.constant":
            env[op.results[0]] = op.value.value.data
        elif name in ("arith.addf", "arith.mulf", "arith.subf"):
            a, b = (env[v] for v in op.operands)
            env[op.results[0]] = np.float32({"arith.addf": a + b, "arith.mulf": a * b, "arith.subf": a - b}[name])
        elif name == "tensor.empty":
            shape = op.results[0].type.get_shape()
            env[op.results[0]] = Buffer(np.full(shape, np.nan, np.float32), "local")
            allocations += 1
        elif name == "tensor.extract":
            idx = tuple(int(env[i]) for i in op.indices)
            env[op.results[0]] = np.float32(env[op.tensor].data[idx])
        elif name in DEST_OPS:
            dest = env[destination(op)]
            inplace = False if flags is None else bool(next(flags))
            if inplace:
                out = dest
            else:
                out = Buffer(dest.data.copy(), "local")
                allocations += 1
            if name == "linalg.fill":
                out.data[...] = env[op.inputs[0]]
            elif name == "tensor.insert":
                out.data[tuple(int(env[i]) for i in op.indices)] = env[op.scalar]
            else:
                ins = [env[v].data.copy() for v in op.inputs]
                out.data[...] = _payload(op, ins)
            env[op.results[0]] = out
        elif name == "func.return":
            return [env[v].data.copy() for v in op.operands], [b.data for b in args], allocations
        else:
            raise ValueError(f"{name} is not part of the small program language of infopt.mlir.bufferize")
    raise ValueError("the function has no func.return")


def _payload(op: Any, ins: list[np.ndarray]) -> np.ndarray:
    """An elementwise generic's payload evaluated on whole arrays (addf / mulf / subf of its block arguments)."""
    block = op.body.block
    env = dict(zip(block.args, ins))
    for inner in block.ops:
        if inner.name == "linalg.yield":
            return env[inner.operands[0]]
        a, b = (env[v] for v in inner.operands)
        env[inner.results[0]] = {"arith.addf": a + b, "arith.mulf": a * b, "arith.subf": a - b}[inner.name]
    raise ValueError("linalg.generic without linalg.yield")


def run_values(func: Any, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The function's results with value semantics (every op makes a new tensor): the meaning to preserve."""
    return _run(func, inputs, None)[0]


def run_buffers(func: Any, inputs: Sequence[np.ndarray], decisions: Sequence[bool]) -> BufferedRun:
    """Run with buffers: each destination op writes in place when its decision is True, else into a new buffer."""
    decisions = list(decisions)
    n = len(dest_ops(func))
    if len(decisions) != n:
        raise ValueError(f"{len(decisions)} decisions for {n} destination ops")
    results, arguments, allocations = _run(func, inputs, decisions)
    return BufferedRun(results, arguments, allocations)


# ----- random programs --------------------------------------------------------------------------------------
def random_program(rng: np.random.Generator, n_ops: int = 6, size: int = 8) -> str:
    """A random program of the language above: 1-2 tensor arguments (some read-only), destination ops over earlier
    tensors, extracts of earlier tensors, 1-2 results. Every value is well defined (no read of an empty tensor)."""
    ttype = f"tensor<{size}xf32>"
    n_args = int(rng.integers(1, 3))
    writable = [bool(rng.random() < 0.5) for _ in range(n_args)]
    args = [f"%x{i}: {ttype}" + ("" if w else " {bufferization.writable = false}") for i, w in enumerate(writable)]
    lines = [f"  %c{k} = arith.constant {k} : index" for k in range(size)]
    lines += ["  %one = arith.constant 1.5 : f32", "  %two = arith.constant -2.0 : f32"]
    tensors = [f"%x{i}" for i in range(n_args)]
    scalars = ["%one", "%two"]
    ident = "affine_map<(d0) -> (d0)>"
    for k in range(n_ops):
        kind = rng.random()
        t = tensors[int(rng.integers(len(tensors)))]
        if kind < 0.2:
            s = scalars[int(rng.integers(len(scalars)))]
            lines.append(f"  %e{k} = tensor.empty() : {ttype}")
            lines.append(f"  %t{k} = linalg.fill ins({s} : f32) outs(%e{k} : {ttype}) -> {ttype}")
            tensors.append(f"%t{k}")
        elif kind < 0.45:
            s = scalars[int(rng.integers(len(scalars)))]
            lines.append(f"  %t{k} = tensor.insert {s} into {t}[%c{int(rng.integers(size))}] : {ttype}")
            tensors.append(f"%t{k}")
        elif kind < 0.65:
            lines.append(f"  %s{k} = tensor.extract {t}[%c{int(rng.integers(size))}] : {ttype}")
            scalars.append(f"%s{k}")
        elif kind < 0.8:
            s = scalars[int(rng.integers(len(scalars)))]
            lines.append(f"  %t{k} = linalg.fill ins({s} : f32) outs({t} : {ttype}) -> {ttype}")
            tensors.append(f"%t{k}")
        else:
            a = tensors[int(rng.integers(len(tensors)))]
            lines += [f"  %t{k} = linalg.generic {{indexing_maps = [{ident}, {ident}, {ident}], iterator_types = "
                      f'["parallel"]}} ins({a}, {t} : {ttype}, {ttype}) outs({t} : {ttype}) {{',
                      f"  ^bb0(%p{k}: f32, %q{k}: f32, %o{k}: f32):", f"    %z{k} = arith.addf %p{k}, %q{k} : f32",
                      f"    linalg.yield %z{k} : f32", f"  }} -> {ttype}"]
            tensors.append(f"%t{k}")
    made = [t for t in tensors if t.startswith("%t")] or tensors
    n_res = min(len(made), int(rng.integers(1, 3)))
    results = [made[-1]] + [made[int(rng.integers(len(made)))] for _ in range(n_res - 1)]
    sig = ", ".join([ttype] * len(results))
    lines.append(f"  return {', '.join(results)} : {sig}")
    return f"func.func @prog({', '.join(args)}) -> ({sig}) {{\n" + "\n".join(lines) + "\n}\n"


def parse_program(text: str) -> Any:
    """The program's `func.func` as an xDSL operation."""
    from .xdsl_ir import parse_module

    module = parse_module(text)
    return next(op for op in module.ops if op.name == "func.func")
