"""Random linalg ops on memrefs, one function each, and what `mlir-opt --convert-linalg-to-loops` makes of them
(for the prediction exercise and its tests).

    text = cases_module([random_linalg_case(rng, kind, f"f{i}") for i, kind in enumerate(KINDS)])
    counts = loops_counts(text)     # {function: {op: count}} without func.func, func.return, arith.constant
"""
from __future__ import annotations

import re

import numpy as np

from .pipeline import op_counts

KINDS = ("matmul", "fill", "transpose", "elementwise", "reduction", "conv", "pool")
PAYLOAD = ("arith.addf", "arith.mulf", "arith.subf", "arith.maximumf", "math.exp", "math.sqrt")
NOT_COUNTED = ("func.func", "func.return", "arith.constant")


def _m(shape) -> str:
    return f"memref<{'x'.join(map(str, shape))}xf32>"


def _map(n: int, dims) -> str:
    return f"affine_map<({', '.join(f'd{i}' for i in range(n))}) -> ({', '.join(f'd{d}' for d in dims)})>"


def _dims(rng: np.random.Generator, rank: int, unit: bool) -> list[int]:
    sizes = [int(v) for v in rng.integers(2, 6, rank)]
    if unit:
        sizes[int(rng.integers(rank))] = 1
    return sizes


def _payload(rng: np.random.Generator, args: list[str], out: str | None, name: str) -> tuple[list[str], str]:
    """A random payload over some of `args` (and `out` when given, combined last); returns (lines, result)."""
    k = 0
    used = [a for a in args if rng.random() < 0.7] or [args[int(rng.integers(len(args)))]]
    lines, vals = [], list(used)
    while len(vals) > 1 or not lines:
        op = str(rng.choice(PAYLOAD if len(vals) > 1 else [p for p in PAYLOAD if p.startswith("math.")]))
        k += 1
        r = f"%{name}_{k}"
        if op.startswith("math."):
            lines.append(f"{r} = {op} {vals[0]} : f32")
            vals = [r, *vals[1:]]
        else:
            lines.append(f"{r} = {op} {vals[0]}, {vals[1]} : f32")   # never x op x (mlir-opt folds max(x, x))
            vals = [r, *vals[2:]]
    if out is not None:
        k += 1
        lines.append(f"%{name}_{k} = arith.addf {out}, {vals[0]} : f32")
        vals = [f"%{name}_{k}"]
    return lines, vals[0]


def random_linalg_case(rng: np.random.Generator, kind: str, name: str, unit_dim: bool | None = None) -> str:
    """One `func.func @name` holding a random linalg op of `kind` on memrefs (a dimension of size 1 if `unit_dim`)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    unit = bool(rng.random() < 0.4) if unit_dim is None else unit_dim
    if kind == "matmul":
        M, N, K = _dims(rng, 3, unit)
        a, b, c = _m((M, K)), _m((K, N)), _m((M, N))
        body = f"  linalg.matmul ins(%a, %b : {a}, {b}) outs(%c : {c})"
        args = f"%a: {a}, %b: {b}, %c: {c}"
    elif kind == "fill":
        shape = _dims(rng, int(rng.integers(1, 4)), unit)
        args = f"%c: {_m(shape)}"
        body = f"  %z = arith.constant 1.5 : f32\n  linalg.fill ins(%z : f32) outs(%c : {_m(shape)})"
    elif kind == "transpose":
        rank = int(rng.integers(2, 4))
        shape = _dims(rng, rank, unit)
        perm = list(range(rank))
        while perm == sorted(perm):          # an identity transpose folds away: always move something
            perm = [int(p) for p in rng.permutation(rank)]
        out = [shape[p] for p in perm]
        args = f"%a: {_m(shape)}, %c: {_m(out)}"
        body = (f"  linalg.transpose ins(%a : {_m(shape)}) outs(%c : {_m(out)}) "
                f"permutation = [{', '.join(map(str, perm))}]")
    elif kind in ("elementwise", "reduction"):
        rank = int(rng.integers(2 if kind == "reduction" else 1, 4))
        shape = _dims(rng, rank, unit)
        n_in = int(rng.integers(1, 4))
        maps, types = [], []
        for j in range(n_in):   # the first input spans every loop (so the loop bounds come from the shapes)
            size = rank if j == 0 else int(rng.integers(1, rank + 1))
            keep = sorted(int(d) for d in rng.choice(rank, size=size, replace=False))
            if rng.random() < 0.5:
                keep = [int(d) for d in rng.permutation(keep)]
            maps.append(keep)
            types.append(_m([shape[d] for d in keep]))
        if kind == "reduction":
            red = sorted(int(d) for d in rng.choice(rank, size=int(rng.integers(1, rank)), replace=False))
            out_dims = [d for d in range(rank) if d not in red]
            iters = ["reduction" if d in red else "parallel" for d in range(rank)]
        else:
            out_dims, iters = list(range(rank)), ["parallel"] * rank
        out_t = _m([shape[d] for d in out_dims])
        ins = [f"%i{j}" for j in range(n_in)]
        blk = [f"%{name}_x{j}" for j in range(n_in)]
        lines, res = _payload(rng, blk, f"%{name}_o" if kind == "reduction" else None, name)
        all_maps = ", ".join([_map(rank, m) for m in maps] + [_map(rank, out_dims)])
        args = ", ".join(f"{v}: {t}" for v, t in zip(ins, types)) + f", %c: {out_t}"
        body = (f"  linalg.generic {{indexing_maps = [{all_maps}], iterator_types = "
                f"[{', '.join(repr(i).replace(chr(39), chr(34)) for i in iters)}]}} "
                f"ins({', '.join(ins)} : {', '.join(types)}) outs(%c : {out_t}) {{\n"
                f"  ^bb0({', '.join(f'{b}: f32' for b in blk)}, %{name}_o: f32):\n"
                + "".join(f"    {ln}\n" for ln in lines) + f"    linalg.yield {res} : f32\n  }}")
    else:
        n = 1 if unit else int(rng.integers(1, 3))
        c, f = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        s = int(rng.choice([1, 2]))
        oh, ow = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        h, w = (oh - 1) * s + kh, (ow - 1) * s + kw
        attrs = f"{{dilations = dense<1> : tensor<2xi64>, strides = dense<{s}> : tensor<2xi64>}}"
        x = _m((n, c, h, w))
        if kind == "conv":
            wt, o = _m((f, c, kh, kw)), _m((n, f, oh, ow))
            args = f"%x: {x}, %w: {wt}, %c: {o}"
            body = f"  linalg.conv_2d_nchw_fchw {attrs} ins(%x, %w : {x}, {wt}) outs(%c : {o})"
        else:
            win, o = _m((kh, kw)), _m((n, c, oh, ow))
            args = f"%x: {x}, %w: {win}, %c: {o}"
            body = f"  linalg.pooling_nchw_max {attrs} ins(%x, %w : {x}, {win}) outs(%c : {o})"
    return f"func.func @{name}({args}) {{\n{body}\n  return\n}}\n"


def cases_module(functions: list[str]) -> str:
    """Several case functions as one module's text."""
    return "module {\n" + "".join(functions) + "}\n"


def split_functions(text: str) -> dict[str, str]:
    """{function name: its text} of a printed module."""
    parts = re.split(r"(?=^\s*func\.func @)", text, flags=re.M)
    out = {}
    for p in parts:
        m = re.match(r"\s*func\.func @(\w+)", p)
        if m:
            out[m.group(1)] = p
    return out


def counted(text: str) -> dict[str, int]:
    """op_counts of one function's text, without the ops the exercise does not count."""
    return {k: v for k, v in sorted(op_counts(text).items()) if k not in NOT_COUNTED and v}


def loops_counts(text: str) -> dict[str, dict[str, int]]:
    """{function: counted ops} after `mlir-opt-19 --convert-linalg-to-loops` (one mlir-opt run for all)."""
    from .tools import mlir_opt

    lowered = mlir_opt(text, "--convert-linalg-to-loops")
    return {name: counted(body) for name, body in split_functions(lowered).items()}


__all__ = ["KINDS", "NOT_COUNTED", "cases_module", "counted", "loops_counts", "random_linalg_case",
           "split_functions"]
