"""Affine analysis on small loop nests: dependences with their distance components, and the legality of
interchange, tiling and parallel loops -- the questions MLIR's affine passes ask before they transform a nest.

A nest is perfectly nested loops with constant bounds around statements `W = f(R1, R2, ...)` whose array indices
are uniform: each index is `iv + c` for one loop variable, or a constant. For such nests the analysis is exact;
`Nest.to_mlir()` writes the nest as an `affine.for` nest so `mlir-opt --test-memref-dependence-check` (and
`--affine-parallelize`, `--test-loop-permutation`) can be asked the same questions (tests/test_mlir_affine.py).

A dependence from access S to access D "at depth d" (MLIR's words) is a pair of iterations x (of S) and y (of D)
touching the same element, with at least one of them a store, equal on loops 1..d-1 and x_d < y_d (depth n+1:
the same iteration, S before D in the body). Its components are, per loop, the range [lb, ub] of y_k - x_k.
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from itertools import product
from typing import Sequence

Component = tuple[int | None, int | None]   # (lb, ub) of one loop's distance; None = unbounded


@dataclass(frozen=True)
class Loop:
    """`affine.for %var = lower to upper` (step 1)."""

    var: str
    lower: int
    upper: int


@dataclass(frozen=True)
class Ref:
    """An array access: per array dim, (loop variable or None, constant offset)."""

    array: str
    index: tuple[tuple[str | None, int], ...]

    def text(self) -> str:
        """As written in the nest: A[i - 1, j + 2, 3]."""
        def one(var, off):
            if var is None:
                return str(off)
            return var if off == 0 else f"{var} {'+' if off > 0 else '-'} {abs(off)}"
        return f"{self.array}[{', '.join(one(v, o) for v, o in self.index)}]"


@dataclass(frozen=True)
class Statement:
    """`write = reads[0] + 0.5 * reads[1] + ...` (any function of the reads; the order of reads is kept)."""

    write: Ref
    reads: tuple[Ref, ...]


@dataclass(frozen=True)
class Access:
    """One memory access in program order: its position, whether it stores, and its Ref."""

    position: int
    is_store: bool
    ref: Ref


@dataclass(frozen=True)
class Dependence:
    """A dependence from access `src` to access `dst` at `depth` (1-based), with one Component per loop."""

    src: int
    dst: int
    depth: int
    components: tuple[Component, ...]

    def text(self) -> str:
        """MLIR's spelling of the components: [1, 1][-1, -1]."""
        return "".join(f"[{_bound(lb, '-inf')}, {_bound(ub, '+inf')}]" for lb, ub in self.components)


def _bound(v: int | None, inf: str) -> str:
    return inf if v is None else str(v)


@dataclass(frozen=True)
class Nest:
    """Perfectly nested loops (outermost first) around statements; `shapes` gives each array's shape."""

    loops: tuple[Loop, ...]
    body: tuple[Statement, ...]
    shapes: dict

    def __post_init__(self) -> None:
        names = [lp.var for lp in self.loops]
        if len(set(names)) != len(names):
            raise ValueError(f"loop variables must differ, got {names}")
        for lp in self.loops:
            if lp.upper <= lp.lower:
                raise ValueError(f"loop {lp.var} runs from {lp.lower} to {lp.upper}: it must run at least once")
        for acc in self.accesses():
            ref = acc.ref
            if ref.array not in self.shapes or len(self.shapes[ref.array]) != len(ref.index):
                raise ValueError(f"{ref.text()}: array {ref.array!r} needs a shape of rank {len(ref.index)}")
            for (var, off), size in zip(ref.index, self.shapes[ref.array]):
                if var is not None and var not in names:
                    raise ValueError(f"{ref.text()} uses {var!r}, which is not a loop of the nest ({names})")
                lo, hi = (off, off) if var is None else (self.loop(var).lower + off, self.loop(var).upper - 1 + off)
                if lo < 0 or hi >= size:
                    raise ValueError(f"{ref.text()} reaches index {lo if lo < 0 else hi} of a dimension of size {size}")

    def loop(self, var: str) -> Loop:
        """The loop of variable `var`."""
        return next(lp for lp in self.loops if lp.var == var)

    def accesses(self) -> list[Access]:
        """Every access in program order: each statement's loads, then its store (as MLIR would number them)."""
        out = []
        for st in self.body:
            for r in st.reads:
                out.append(Access(len(out), False, r))
            out.append(Access(len(out), True, st.write))
        return out

    def text(self) -> str:
        """The nest as pseudo-code."""
        lines = [("  " * k) + f"for {lp.var} in {lp.lower}..{lp.upper - 1}:" for k, lp in enumerate(self.loops)]
        pad = "  " * len(self.loops)
        for st in self.body:
            rhs = " + ".join(r.text() for r in st.reads) or "1"
            lines.append(f"{pad}{st.write.text()} = f({rhs})")
        return "\n".join(lines)

    def to_mlir(self, name: str = "nest") -> str:
        """The nest as one `func.func @name` of `affine.for` loops over memref arguments (sorted by name)."""
        arrays = sorted(self.shapes)
        args = ", ".join(f"%{a}: memref<{'x'.join(map(str, self.shapes[a]))}xf32>" for a in arrays)
        ivs = {lp.var: f"%{lp.var}" for lp in self.loops}
        lines = [f"func.func @{name}({args}) attributes {{llvm.emit_c_interface}} {{",
                 "  %half = arith.constant 0.5 : f32", "  %one = arith.constant 1.0 : f32"]
        for k, lp in enumerate(self.loops):
            lines.append("  " * (k + 1) + f"affine.for {ivs[lp.var]} = {lp.lower} to {lp.upper} {{")
        pad = "  " * (len(self.loops) + 1)
        count = 0
        for st in self.body:
            acc = "%one"
            for r in st.reads:
                v, s, t = f"%r{count}", f"%s{count}", f"%t{count}"
                count += 1
                lines += [f"{pad}{v} = affine.load %{r.array}[{_mlir_index(r, ivs)}] : {_memref(self, r.array)}",
                          f"{pad}{s} = arith.mulf {acc}, %half : f32", f"{pad}{t} = arith.addf {s}, {v} : f32"]
                acc = t
            lines.append(f"{pad}affine.store {acc}, %{st.write.array}[{_mlir_index(st.write, ivs)}] : "
                         f"{_memref(self, st.write.array)}")
        for k in range(len(self.loops), 0, -1):
            lines.append("  " * k + "}")
        lines += ["  return", "}"]
        return "\n".join(lines) + "\n"


def _memref(nest: Nest, array: str) -> str:
    return f"memref<{'x'.join(map(str, nest.shapes[array]))}xf32>"


def _mlir_index(ref: Ref, ivs: dict[str, str]) -> str:
    parts = []
    for var, off in ref.index:
        if var is None:
            parts.append(str(off))
        else:
            parts.append(ivs[var] if off == 0 else f"{ivs[var]} {'+' if off > 0 else '-'} {abs(off)}")
    return ", ".join(parts)


def _loop_constraints(nest: Nest, s: Ref, d: Ref) -> dict[str, list[tuple[str, int]]] | None:
    """Per loop, what "s and d touch the same element" requires: ("diff", y - x), ("x", value), ("y", value).
    None when no element can be shared (two different constants)."""
    out: dict[str, list[tuple[str, int]]] = {lp.var: [] for lp in nest.loops}
    for (vs, cs), (vd, cd) in zip(s.index, d.index):
        if vs is None and vd is None:
            if cs != cd:
                return None
        elif vs is None:
            out[vd].append(("y", cs - cd))
        elif vd is None:
            out[vs].append(("x", cd - cs))
        elif vs == vd:
            out[vs].append(("diff", cs - cd))
        else:
            raise ValueError(f"{s.text()} and {d.text()} index one dimension with different loops ({vs}, {vd}): "
                             "not a uniform dependence; this analysis handles `iv + c` against the same iv only")
    return out


def _range(lp: Loop, rules: list[tuple[str, int]], order: str) -> Component | None:
    """[min, max] of y - x over x, y in the loop's range obeying `rules` and `order` ('eq', 'lt' (x < y), 'any')."""
    diffs = []
    for x, y in product(range(lp.lower, lp.upper), repeat=2):
        if order == "eq" and x != y or order == "lt" and not x < y:
            continue
        if all((kind == "diff" and y - x == v) or (kind == "x" and x == v) or (kind == "y" and y == v)
               for kind, v in rules):
            diffs.append(y - x)
    return (min(diffs), max(diffs)) if diffs else None


def dependence(nest: Nest, src: Access, dst: Access, depth: int) -> Dependence | None:
    """The dependence from `src` to `dst` at `depth` (1 .. loops + 1), or None (what MLIR prints as `false`)."""
    n = len(nest.loops)
    if not 1 <= depth <= n + 1:
        raise ValueError(f"depth must be in 1..{n + 1}, got {depth}")
    if src.ref.array != dst.ref.array or not (src.is_store or dst.is_store):
        return None
    if depth == n + 1 and src.position >= dst.position:
        return None
    rules = _loop_constraints(nest, src.ref, dst.ref)
    if rules is None:
        return None
    comps = []
    for k, lp in enumerate(nest.loops, 1):
        order = "eq" if k < depth or depth == n + 1 else "lt" if k == depth else "any"
        c = _range(lp, rules[lp.var], order)
        if c is None:
            return None
        comps.append(c)
    return Dependence(src.position, dst.position, depth, tuple(comps))


def dependences(nest: Nest) -> list[Dependence]:
    """Every dependence of the nest: all ordered pairs of accesses, all depths (as --test-memref-dependence-check)."""
    accs = nest.accesses()
    out = []
    for s, d in product(accs, repeat=2):
        for depth in range(1, len(nest.loops) + 2):
            dep = dependence(nest, s, d, depth)
            if dep is not None:
                out.append(dep)
    return out


def interchange_is_legal(deps: Sequence[Sequence[Component]], perm: Sequence[int]) -> bool:
    """May the loops be reordered so that `perm[k]` (an original loop) becomes the k-th loop? Legal iff, for each
    dependence, reading its components in the new order, the first lower bound that is not zero is positive (an
    unbounded lower bound counts as negative) -- MLIR's checkLoopInterchangeDependences."""
    n = len(perm)
    if sorted(perm) != list(range(n)):
        raise ValueError(f"perm must be a permutation of 0..{n - 1}, got {list(perm)}")
    for comps in deps:
        if len(comps) != n:
            raise ValueError(f"a dependence has {len(comps)} components but the permutation has {n} loops")
        for k in perm:
            lb = comps[k][0]
            if lb is None or lb < 0:
                return False
            if lb > 0:
                break
    return True


def tiling_is_legal(deps: Sequence[Sequence[Component]]) -> bool:
    """May the whole band be tiled with rectangular tiles? Iff no dependence component can be negative (the band is
    fully permutable)."""
    return all(lb is not None and lb >= 0 for comps in deps for lb, _ in comps)


def parallel_loops(nest: Nest) -> list[str]:
    """The loops that carry no dependence (no dependence at their depth): what --affine-parallelize converts."""
    carried = {d.depth for d in dependences(nest)}
    return [lp.var for k, lp in enumerate(nest.loops, 1) if k not in carried]


def mlir_permutation_map(perm: Sequence[int]) -> list[int]:
    """MLIR's `permutation-map` for `perm`: it lists, for each original loop, its new position (the inverse)."""
    inv = [0] * len(perm)
    for new, old in enumerate(perm):
        inv[old] = new
    return inv


# ----- the same questions asked of mlir-opt -------------------------------------------------------------------
_REMARK = re.compile(r"remark: dependence from (\d+) to (\d+) at depth (\d+) = (.*)$", re.M)
_COMP = re.compile(r"\[([^,\]]+), ([^\]]+)\]")


def mlir_dependences(nest: Nest) -> list[Dependence]:
    """What `mlir-opt --test-memref-dependence-check` reports for the nest, as Dependences."""
    from .tools import MlirToolError, tool_path

    proc = subprocess.run([tool_path("mlir-opt"), "--test-memref-dependence-check"], input=nest.to_mlir(),
                          capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise MlirToolError(f"mlir-opt --test-memref-dependence-check failed:\n{proc.stderr[:3000]}")
    out = []
    n = len(nest.loops)
    for m in _REMARK.finditer(proc.stderr):
        src, dst, depth, what = int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4).strip()
        if what == "false":
            continue
        if what == "true":
            comps = ((0, 0),) * n
        else:
            comps = tuple((_num(a), _num(b)) for a, b in _COMP.findall(what))
        out.append(Dependence(src, dst, depth, comps))
    return out


def _num(text: str) -> int | None:
    text = text.strip()
    return None if "inf" in text else int(text)


def mlir_parallel_loops(nest: Nest) -> list[str]:
    """The loops `mlir-opt --affine-parallelize` turns into `affine.parallel` (matched to the nest by depth)."""
    from .tools import mlir_opt

    text = mlir_opt(nest.to_mlir(), "--affine-parallelize")
    heads = re.findall(r"^\s*affine\.(for|parallel)\b", text, re.M)
    return [lp.var for lp, kind in zip(nest.loops, heads) if kind == "parallel"]


def mlir_permuted(nest: Nest, perm: Sequence[int]) -> str:
    """The nest's MLIR after `mlir-opt --test-loop-permutation` puts loop perm[k] k-th (mlir-opt does not check
    legality: it permutes whatever it is given)."""
    from .tools import mlir_opt

    mapping = ",".join(map(str, mlir_permutation_map(perm)))
    return mlir_opt(nest.to_mlir(), f"--test-loop-permutation=permutation-map={mapping}")


def run_nest_mlir(mlir_text: str, nest: Nest, arrays: dict, name: str = "nest") -> dict:
    """Compile an affine nest's MLIR (e.g. a permuted one) and run it on copies of `arrays` ({name: float32 array});
    returns the arrays after the run."""
    import numpy as np

    from ..ir.types import TensorType
    from .execute import compile_function

    order = sorted(nest.shapes)
    fn = compile_function(mlir_text, name, [TensorType(tuple(nest.shapes[a])) for a in order])
    out = {a: np.array(arrays[a], dtype=np.float32, order="C", copy=True) for a in order}
    fn.call(*[out[a] for a in order])
    return out
