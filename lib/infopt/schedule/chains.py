"""Elementwise chains for the fusion lessons: build a chain unfused (one loop and one buffer per op), fuse it with
the schedule primitives, and count the bytes each version moves.

``elementwise_chain(n, ["scale", "bias", "relu"])`` makes ``x -> t1 -> t2 -> y`` with temps in memory;
``fused_chain`` applies ``fuse`` to neighbouring loops and ``contract`` to every temp, so the
intermediates live in registers and only ``x``, the per-op parameters and ``y`` touch memory.
"""
from __future__ import annotations

from typing import Sequence

from ..codegen.expr import Buffer, Expr, Var, call, maximum
from ..codegen.kernel_ir import Kernel, Store, loop
from ..codegen.walk import loops_in
from .access import collect
from .loop_primitives import fuse
from .placement import contract

OPS = {
    "scale": lambda x, p: x * p,
    "bias": lambda x, p: x + p,
    "relu": lambda x, p: maximum(x, 0.0),
    "square": lambda x, p: x * x,
    "exp": lambda x, p: call("exp", x),
    "tanh": lambda x, p: call("tanh", x),
}
PARAM_OPS = ("scale", "bias")


def elementwise_chain(n: int, ops: Sequence[str], name: str = "chain") -> Kernel:
    """An unfused chain over ``n`` float32 elements: one loop per op, intermediates in temp buffers."""
    ops = list(ops)
    if not ops:
        raise ValueError("the chain needs at least one op")
    bad = [o for o in ops if o not in OPS]
    if bad:
        raise ValueError(f"unknown ops {bad}; choose from {sorted(OPS)}")
    x = Buffer("x", (n,))
    params = [Buffer(f"p{t}", (n,)) for t, o in enumerate(ops) if o in PARAM_OPS]
    y = Buffer("y", (n,), role="out")
    temps = [Buffer(f"t{t}", (n,), role="temp") for t in range(len(ops) - 1)]
    body, src, pi = [], x, 0
    for t, op in enumerate(ops):
        v = Var(f"i{t}")
        dst = temps[t] if t < len(ops) - 1 else y
        p: Expr | None = None
        if op in PARAM_OPS:
            p = params[pi][v]
            pi += 1
        body.append(loop(v, n, body=Store(dst, (v,), OPS[op](src[v], p))))
        src = dst
    return Kernel(f"{name}_{'_'.join(ops)}_{n}", (x, *params, y, *temps), tuple(body))


def fused_chain(kernel: Kernel) -> Kernel:
    """Fuse every loop of an ``elementwise_chain`` into one and keep the intermediates in registers."""
    k = kernel
    while len(k.body) > 1:
        k = fuse(k, k.body[0].var.name, k.body[1].var.name)
    for b in [b for b in k.buffers if b.role == "temp"]:
        k = contract(k, b.name)
    return k.__class__(k.name + "_fused", k.buffers, k.body, k.fastmath)


def kernel_bytes(kernel: Kernel) -> int:
    """Bytes a kernel of top-level streaming loops moves: each loop reads/writes each buffer it touches once."""
    total = 0
    for s in kernel.body:
        acc = collect((s,))
        names = set(acc.reads) | set(acc.writes)
        for nm in names:
            b = kernel.buffer(nm)
            total += b.size * (8 if b.dtype in ("f64", "i64") else 4) * (2 if nm in acc.reads and nm in acc.writes else 1)
    return total


def loop_count(kernel: Kernel) -> int:
    """Number of loops in a kernel (1 for a fully fused chain)."""
    return len(loops_in(kernel.body))
