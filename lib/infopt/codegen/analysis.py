"""Static analyses of LLVM IR, walking llvmlite.binding's functions, blocks and instructions.

All counts are static (instructions in the code, each vector lane counted), not dynamic (times a
loop runs): they say what the compiler produced, the same on every machine, so they can be graded.
"""
from __future__ import annotations

import ctypes
import re
from collections import Counter
from typing import Any, Iterator

_LANES = re.compile(r"^<(\d+) x ")
FLOAT_ARITH = ("fadd", "fsub", "fmul", "fdiv", "frem", "fneg")


def _module(ir: Any):
    """A parsed module from IR text, or the module itself."""
    if isinstance(ir, str):
        from .llvm_jit import parse_assembly

        return parse_assembly(ir)
    return ir


def instructions(ir: Any, function: str | None = None) -> Iterator[Any]:
    """Every instruction of every defined function (or only ``function``), in block order."""
    mod = _module(ir)
    for fn in mod.functions:
        if fn.is_declaration or (function is not None and fn.name != function):
            continue
        for block in fn.blocks:
            yield from block.instructions


def lanes(type_text: str) -> int:
    """How many lanes a type has: 8 for ``<8 x float>``, 1 for a scalar."""
    m = _LANES.match(type_text.strip())
    return int(m.group(1)) if m else 1


def _is_float(type_text: str) -> bool:
    return any(t in type_text for t in ("float", "double", "half", "bfloat"))


def value_type(inst: Any) -> str:
    """The type an instruction computes, or for a store the type it stores."""
    if inst.opcode == "store":
        return str(next(iter(inst.operands)).type)
    return str(inst.type)


def callee(inst: Any) -> str:
    """The name of the function a call instruction calls ('' when indirect)."""
    ops = list(inst.operands)
    return ops[-1].name if ops else ""


def _key(v: Any) -> int:
    return ctypes.cast(v._ptr, ctypes.c_void_p).value or 0  # the LLVM Value's address identifies it


def instruction_mix(ir: Any, function: str | None = None) -> dict[str, int]:
    """Static count of instructions by opcode (calls counted by callee, e.g. ``call llvm.fma.v8f32``)."""
    c: Counter[str] = Counter()
    for inst in instructions(ir, function):
        op = inst.opcode
        c[f"call {callee(inst)}" if op == "call" else op] += 1
    return dict(c.most_common())


def count_fmas(ir: Any, function: str | None = None) -> int:
    """Floating-point multiply-accumulates, each vector lane counted.

    A MAC is an ``fmul`` whose result feeds an ``fadd``/``fsub`` (each fmul counted once), or a call
    to ``llvm.fma.*`` / ``llvm.fmuladd.*``.
    """
    insts = list(instructions(ir, function))
    fmuls = {_key(i): i for i in insts if i.opcode == "fmul"}
    used: set[int] = set()
    total = 0
    for inst in insts:
        if inst.opcode in ("fadd", "fsub"):
            for op in list(inst.operands)[:2]:
                k = _key(op)
                if k in fmuls and k not in used:
                    used.add(k)
                    total += lanes(str(fmuls[k].type))
        elif inst.opcode == "call" and re.match(r"llvm\.(fma|fmuladd)\.", callee(inst)):
            total += lanes(str(inst.type))
    return total


def flop_estimate(ir: Any, function: str | None = None) -> int:
    """FLOPs in the code: 1 per lane of each float arithmetic op (an fmul+fadd MAC is 2), 2 per fma lane."""
    total = 0
    for i in instructions(ir, function):
        if i.opcode in FLOAT_ARITH:
            total += lanes(str(i.type))
        elif i.opcode == "call" and re.match(r"llvm\.(fma|fmuladd)\.", callee(i)):
            total += 2 * lanes(str(i.type))
    return total


def count_memory(ir: Any, function: str | None = None) -> dict[str, int]:
    """Loads and stores: instruction counts and lane counts (elements moved per execution)."""
    out = {"loads": 0, "stores": 0, "load_lanes": 0, "store_lanes": 0}
    for inst in instructions(ir, function):
        if inst.opcode in ("load", "store"):
            kind = inst.opcode + "s"
            out[kind] += 1
            out[inst.opcode + "_lanes"] += lanes(value_type(inst))
    return out


def vectorization(ir: Any, function: str | None = None) -> dict[str, Any]:
    """Whether the code is vectorized and how wide: float/memory instructions by vector width."""
    widths: Counter[int] = Counter()
    for inst in instructions(ir, function):
        if inst.opcode in FLOAT_ARITH + ("load", "store", "call", "select", "fcmp"):
            t = value_type(inst)
            if inst.opcode == "fcmp":
                t = str(next(iter(inst.operands)).type)
            if _is_float(t):
                widths[lanes(t)] += 1
    vec = {w: n for w, n in widths.items() if w > 1}
    return {"vectorized": bool(vec), "max_width": max(vec) if vec else 1,
            "vector_instructions": sum(vec.values()), "scalar_instructions": widths.get(1, 0),
            "by_width": dict(sorted(widths.items()))}
