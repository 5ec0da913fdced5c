"""Chapters 5-6 of the tutorial: Toy lowered to affine loops over memrefs, then to LLVM, and run.

`lower_to_affine` is the partial lowering of chapter 5: every computing Toy op becomes a `memref.alloc` and an
affine loop nest (constants: one `affine.store` per element, as the tutorial does), and `toy.print` stays, now
printing the memref. `lower_print` finishes chapter 6's job for print: a call to MLIR's runtime `printMemrefF64`.
`run_toy_native` takes the result through mlir-opt-19 to the llvm dialect and runs it with `mlir-cpu-runner-19`,
returning the printed arrays. A `toy.reshape` must have been folded by canonicalize() first (as in the tutorial).
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import affine, arith, func, memref
from xdsl.dialects.builtin import (FloatAttr, IndexType, IntegerAttr, MemRefType, ModuleOp, UnitAttr,
                                   UnrankedMemRefType, f64)
from xdsl.ir import Block, Region
from xdsl.rewriter import InsertPoint

from ..tools import LLVM_ROOT, run_tool
from .dialect import PrintOp, shape_of

TO_LLVM = ("--lower-affine", "--convert-scf-to-cf", "--finalize-memref-to-llvm", "--convert-arith-to-llvm",
           "--convert-func-to-llvm", "--convert-cf-to-llvm", "--reconcile-unrealized-casts")


def _loops(b: Builder, shape: tuple[int, ...], body) -> None:
    """An affine.for nest over `shape`; `body(builder, ivs)` fills the innermost block."""
    if not shape:
        body(b, [])
        return
    block = Block(arg_types=[IndexType()])
    b.insert(affine.ForOp.from_region([], [], [], [], 0, shape[0], Region(block)))
    inner = Builder(InsertPoint.at_end(block))
    _loops(inner, shape[1:], lambda bb, ivs: body(bb, [block.args[0], *ivs]))
    inner.insert(affine.YieldOp.get())


def lower_to_affine(module: Any) -> ModuleOp:
    """A new module: @main with Toy's computing ops as affine loops over memrefs; toy.print prints the memrefs."""
    main = next(op for op in module.walk() if op.name == "func.func" and op.sym_name.data == "main")
    block = Block()
    b = Builder(InsertPoint.at_end(block))
    buf: dict = {}
    allocs = []
    index_consts: dict[int, Any] = {}

    def idx(i: int):
        if i not in index_consts:
            index_consts[i] = b.insert(arith.ConstantOp(IntegerAttr(i, IndexType()))).result
        return index_consts[i]

    for op in main.body.block.ops:
        name = op.name
        if name == "func.return":
            break
        if name == "toy.print":
            b.insert(PrintOp(buf[op.arg]))
            continue
        shape = shape_of(op.results[0].type)
        if shape is None:
            raise ValueError(f"{name} has an unranked result: run infer_shapes() before lowering")
        if name == "toy.reshape":
            raise ValueError("toy.reshape is not lowered: canonicalize() folds it into its constant first")
        out = b.insert(memref.AllocOp([], [], MemRefType(f64, list(shape)))).memref
        allocs.append(out)
        buf[op.results[0]] = out
        if name == "toy.constant":
            values = [float(v) for v in op.value.get_values()]
            for flat, v in enumerate(values):
                at = np.unravel_index(flat, shape)
                c = b.insert(arith.ConstantOp(FloatAttr(v, f64))).result
                b.insert(affine.StoreOp(c, out, [idx(int(i)) for i in at]))
        elif name == "toy.transpose":
            src = buf[op.arg]
            _loops(b, shape, lambda bb, ivs, src=src, out=out: bb.insert(affine.StoreOp(
                bb.insert(affine.LoadOp(src, [ivs[1], ivs[0]])).result, out, ivs)))
        elif name in ("toy.add", "toy.mul"):
            lhs, rhs = buf[op.lhs], buf[op.rhs]
            kind = arith.AddfOp if name == "toy.add" else arith.MulfOp

            def body(bb, ivs, lhs=lhs, rhs=rhs, out=out, kind=kind):
                x = bb.insert(affine.LoadOp(lhs, ivs)).result
                y = bb.insert(affine.LoadOp(rhs, ivs)).result
                bb.insert(affine.StoreOp(bb.insert(kind(x, y)).result, out, ivs))
            _loops(b, shape, body)
        else:
            raise ValueError(f"lower_to_affine: no lowering for {name}")
    for a in allocs:
        b.insert(memref.DeallocOp.get(a))
    b.insert(func.ReturnOp())
    return ModuleOp([func.FuncOp("main", ((), ()), Region(block))])


def lower_print(module: ModuleOp) -> ModuleOp:
    """toy.print of a memref -> memref.cast to memref<*xf64> + a call to the runtime's printMemrefF64 (in place)."""
    from xdsl.rewriter import Rewriter

    unranked = UnrankedMemRefType.from_type(f64)
    for op in list(module.walk()):
        if isinstance(op, PrintOp):
            cast = memref.CastOp.get(op.arg, unranked)
            call = func.CallOp("printMemrefF64", [cast.dest], [])
            Rewriter.insert_op([cast, call], InsertPoint.before(op))
            Rewriter.erase_op(op)
    decl = func.FuncOp.external("printMemrefF64", [unranked], [])
    decl.attributes["llvm.emit_c_interface"] = UnitAttr()
    module.body.block.add_op(decl)
    module.verify()
    return module


_DATA = re.compile(r"sizes = \[([\d, ]*)\].*?data =\s*(\[.*?\])\s*(?=Unranked|\Z)", re.S)


def parse_printed(text: str) -> list[np.ndarray]:
    """The arrays in printMemrefF64's output."""
    out = []
    for m in _DATA.finditer(text):
        shape = tuple(int(s) for s in m.group(1).split(",") if s.strip())
        nums = [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?|nan|inf", m.group(2))]
        out.append(np.array(nums, dtype=np.float64).reshape(shape))
    return out


def run_toy_native(module: ModuleOp) -> tuple[list[np.ndarray], str]:
    """Lower the (affine + print-call) module to the llvm dialect with mlir-opt-19 and run @main with
    mlir-cpu-runner-19 (the runtime's printMemrefF64 does the printing); returns (arrays, the LLVM-dialect IR)."""
    from ..xdsl_ir import print_ir

    llvm = run_tool("mlir-opt", list(TO_LLVM), print_ir(module, generic=True))
    libs = ",".join(str(LLVM_ROOT / "lib" / n) for n in ("libmlir_runner_utils.so", "libmlir_c_runner_utils.so"))
    out = run_tool("mlir-cpu-runner", ["-e", "main", "-entry-point-result=void", f"-shared-libs={libs}"], llvm)
    return parse_printed(out), llvm
