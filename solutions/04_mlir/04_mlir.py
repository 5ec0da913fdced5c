# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Unit 04 — MLIR: many levels of IR, progressive lowering, and a dialect of your own
#
# LLVM (unit 03) has one IR, a little above machine code. An AI compiler needs several: a graph of tensor ops,
# loop nests over buffers, vectors, and finally LLVM IR — and each level is where some decisions are easy
# (fusion on the graph, tiling on loops, SIMD width on vectors). **MLIR** is a framework for defining such levels
# as *dialects* that live in one IR, so a program can be *lowered progressively*, one dialect at a time, with the
# same data structures, printer, verifier and pass machinery at every step. TensorFlow, IREE, Triton, torch-mlir,
# Mojo and most new accelerator compilers are built on it.
#
# In this unit you will
# 1. see MLIR's data model — operations, regions, blocks, types, attributes — with **xDSL** (MLIR in Python) and
#    Debian's **`mlir-opt-19`** side by side;
# 2. tour the dialects an AI compiler uses (`tensor`, `linalg`, `memref`, `affine`, `scf`, `vector`, `gpu`,
#    `llvm`, and `tosa`, the usual entry from ONNX and TensorFlow);
# 3. turn the `infopt` graphs of units 01–02 into MLIR and lower a matmul stage by stage down to LLVM IR and
#    machine code, then whole models;
# 4. see **bufferization** — when tensors become buffers — and decide it yourself;
# 5. tile and vectorize a matmul with the transform dialect, and measure it;
# 6. analyse affine loop nests: dependences, and when interchange and tiling are legal;
# 7. condense MLIR's **Toy tutorial** (chapters 1–7) in xDSL: a dialect, rewrite patterns, shape inference,
#    lowering to affine and LLVM, a native run;
# 8. write a custom **`npu` dialect** for unit 07's systolic array, with ODS beside it, and lower `linalg.matmul`
#    to tiled DMA and compute commands that run on the simulator;
# 9. watch **IREE**, a production MLIR compiler, do the same on the digits CNN.
#
# It uses unit 01's graph IR and models, unit 03's view of LLVM, unit 06's tiling and unit 07's accelerator.
# Plan on about three hours.
#
# **Graded exercises** (autograded; each has visible tests you can run and hidden tests on fresh random inputs):
#
# | # | function | points |
# |---|---|---|
# | 1 | `predict_loops(op)` — what `--convert-linalg-to-loops` writes for a linalg op, predicted | 2 |
# | 2 | `inplace_decisions(func)` — bufferization: which writes may reuse their destination's buffer | 3 |
# | 3 | `interchange_is_legal(deps, perm)` — the legality of a loop interchange from dependence components | 2 |
# | 4 | `FoldConstantTranspose` — a rewrite pattern with a legality rule: `transpose(constant)` folded | 3 |
# | 5 | `ShapeInferencePass` — Toy's shape inference as a registered xDSL pass | 3 |
# | 6 | `NpuMatmul` — the `npu.matmul` op in xDSL, with its verifier | 3 |
# | 7 | `ods_record(spec)` — an op written in ODS, checked by what mlir-tblgen generates from it | 2 |
# | 8 | `emit_npu_schedule(nb, A, B, C, config)` — the `linalg.matmul -> npu` lowering, on a cycle budget | 4 |
#
# Points follow the decisions an exercise leaves to you: 4 for the lowering (its tiling and loop order are yours), 3
# where you write a transformation or a verifier with several conditions, 2 where you apply stated rules to many
# cases.
#
# The exercises are independent: the notebook uses the library's versions (`infopt.mlir`), not your code, to
# prepare the next step. Test failures say what was expected and what your code returned.

# %%
import time

import numpy as np
import plotly.graph_objects as go
from IPython.display import HTML, display

from infopt.grading import (call_student, case, check_equal, check_raises, check_true, forbidding,
                            grading_rng)
from infopt.mlir.tools import mlir_opt, tool_versions
from infopt.mlir.xdsl_ir import parse_module, print_ir

_T0 = time.perf_counter()
for tool, version in tool_versions().items():
    print(f"{tool:15} {version}")

# %% [markdown]
# ## 1. Why many levels of IR
#
# | level | what it sees | what is easy there | MLIR dialects |
# |---|---|---|---|
# | graph | tensor ops with shapes | fusion, layout, constant folding | `tosa`, `linalg` on tensors, `tensor` |
# | loops | iteration spaces over buffers | tiling, interchange, parallelisation | `linalg` on memrefs, `affine`, `scf`, `memref` |
# | vectors | fixed-width SIMD values | vector width, unrolling, FMA | `vector` |
# | target | instructions, pointers | registers, scheduling | `llvm`, `gpu`/`nvvm`, your accelerator's |
#
# In LLVM, a matmul is already a loop nest of loads and stores: the fact that it *is* a matmul — that it can be
# tiled, that its accumulator can stay in registers — has to be rediscovered from the loops, and usually is not.
# In MLIR it stays `linalg.matmul` until a pass chooses to tile it, and after tiling the tiles are still
# `linalg.matmul`s. Each dialect holds the information the next decision needs, and drops what no later step uses.
#
# ## 2. The data model: operations, regions, blocks, types, attributes
#
# Everything in MLIR is an **operation**: `%r = dialect.name(%operands) {attributes} : (types) -> types`. An
# operation may hold **regions**; a region is a list of **blocks**; a block has **arguments** and a list of
# operations ending in a terminator. Functions, loops and `linalg.generic`'s payload are all operations with a
# region. **Types** (`tensor<4xf32>`, `memref<4xf32>`, `index`) and **attributes** (constants, maps, strings) are
# open sets too: a dialect can add its own. Here is a small function, parsed by xDSL and walked:

# %%
SAMPLE = """
func.func @scale_add(%x: tensor<4xf32>, %y: tensor<4xf32>, %s: f32) -> tensor<4xf32> {
  %init = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
       ins(%x, %y : tensor<4xf32>, tensor<4xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %p = arith.mulf %a, %s : f32
    %q = arith.addf %p, %b : f32
    linalg.yield %q : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
"""
sample = parse_module(SAMPLE)


def outline(op, depth: int = 0) -> None:
    """Print an operation, then its regions' blocks (with their argument types) and their operations, nested."""
    pad = "  " * depth
    props = {**op.properties, **op.attributes}
    attrs = f"  attrs: {sorted(props)}" if props else ""
    types = ", ".join(str(r.type) for r in op.results)
    print(f"{pad}{op.name}" + (f" -> {types}" if types else "") + attrs)
    for region in op.regions:
        for block in region.blocks:
            print(f"{pad}  block({', '.join(str(a.type) for a in block.args)})")
            for inner in block.ops:
                outline(inner, depth + 2)


outline(sample)

# %% [markdown]
# The custom syntax above is each dialect's pretty form. Every operation also has one **generic form** that any
# MLIR tool can parse, knowing nothing of the dialect — the quoted name, operands, `<{properties}>`, the regions and
# the function type. xDSL prints it, and `mlir-opt-19` (the C++ MLIR of LLVM 19) reads it back, prints its own
# pretty form, and verifies it:

# %%
generic = print_ir(sample, generic=True)
print(generic[:900], "...\n")
print(mlir_opt(generic, "--canonicalize"))

# %% [markdown]
# ## 3. The dialects of an AI compiler
#
# | dialect | level | holds | example op |
# |---|---|---|---|
# | `tosa` | graph | a fixed set of NN ops with precise numerics; the common entry from ONNX / TF Lite | `tosa.conv2d`, `tosa.add` |
# | `tensor` | graph | immutable values: create, slice, pad, reshape | `tensor.empty`, `tensor.pad`, `tensor.extract_slice` |
# | `linalg` | graph → loops | structured ops: an iteration space, indexing maps and a payload; named (`matmul`, `conv_2d_nchw_fchw`, pooling, `fill`) or `generic`; on tensors *or* memrefs | `linalg.matmul`, `linalg.generic` |
# | `memref` | loops | buffers with a shape and a layout (strides, offset) | `memref.alloc`, `memref.load`, `memref.subview` |
# | `affine` | loops | loops and accesses whose bounds and indices are affine: exact analysis | `affine.for`, `affine.load` |
# | `scf` | loops | structured control flow, any bounds | `scf.for`, `scf.if`, `scf.parallel` |
# | `vector` | SIMD | n-D vectors, contractions, transfers to and from memory | `vector.contract`, `vector.fma` |
# | `gpu` | target | kernels, launches, thread / block ids | `gpu.launch`, `gpu.thread_id` |
# | `llvm` | target | LLVM IR as MLIR, one op per instruction | `llvm.fadd`, `llvm.getelementptr` |
#
# **tosa** is where a model exported from ONNX or TensorFlow Lite usually enters (torch-mlir and IREE's importers
# also go through `torch` → `linalg`). `tosa-to-linalg` turns each tosa op into `linalg` on tensors — note how the
# broadcast of `%b` became an indexing map with a `0`:

# %%
TOSA = """
func.func @add_relu(%a: tensor<2x3xf32>, %b: tensor<1x3xf32>) -> tensor<2x3xf32> {
  %0 = tosa.add %a, %b : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
  %1 = tosa.clamp %0 {min_fp = 0.0 : f32, max_fp = 3.4e38 : f32, min_int = 0 : i64, max_int = 2147483647 : i64}
       : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}
"""
print(mlir_opt(TOSA, "--pass-pipeline=builtin.module(func.func(tosa-to-linalg))"))

# %% [markdown]
# **gpu**: a parallel loop, tiled by 128 and mapped to a grid of blocks and threads — the shape of every GPU
# kernel launch. (This machine has no GPU; `mlir-opt` rewrites the IR all the same.)

# %%
PARALLEL = """
func.func @scale(%x: memref<1024xf32>, %y: memref<1024xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 1024 : index
  %two = arith.constant 2.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = memref.load %x[%i] : memref<1024xf32>
    %w = arith.mulf %v, %two : f32
    memref.store %w, %y[%i] : memref<1024xf32>
  }
  return
}
"""
print(mlir_opt(PARALLEL, "--scf-parallel-loop-tiling=parallel-loop-tile-sizes=128", "--gpu-map-parallel-loops",
               "--convert-parallel-loops-to-gpu", "--canonicalize"))

# %% [markdown]
# `gpu.launch` still sits inside the host function. Three more passes take it to what a GPU runs, and no GPU is
# needed for them (`infopt.mlir.gpu.lower_to_ptx`): `gpu-kernel-outlining` moves the launch body into a `gpu.func` of its own, in a
# `gpu.module`, and leaves a `gpu.launch_func` on the host; `convert-gpu-to-nvvm` lowers the kernel to the `llvm`
# and `nvvm` dialects, where a thread id is the read of a PTX special register; and `gpu-module-to-binary` has
# LLVM's NVPTX back end write the PTX text a driver would load:

# %%
from infopt.mlir.gpu import lower_to_ptx
from infopt.mlir.pipeline import op_counts

gpu_stages = lower_to_ptx(PARALLEL, chip="sm_90")
for stage in ("launch", "outlined", "nvvm"):
    seen = {op: n for op, n in sorted(op_counts(gpu_stages[stage]).items())
            if op.startswith(("gpu.", "nvvm.")) or op in ("scf.parallel", "llvm.load", "llvm.store")}
    print(f"{stage:9}", seen)
ptx = gpu_stages["ptx"]
print("\nPTX:", ", ".join(line.strip() for line in ptx.splitlines() if line.startswith((".target", ".visible"))))
print("\n".join(line for line in ptx.splitlines() if "tid.x" in line or "ld.global" in line or "st.global" in line))

# %% [markdown]
# ## 4. From our graphs to MLIR
#
# `infopt.mlir.emit.emit_graph(graph)` writes an `infopt` graph as one `func.func` in the `func`, `linalg`,
# `tensor`, `arith` and `math` dialects: named linalg ops where they exist (`matmul`, `conv_2d_nchw_fchw`,
# `pooling_nchw_max`, `fill`, `transpose`), `linalg.generic` for the rest (elementwise ops with numpy
# broadcasting as indexing maps, softmax and layer norm as reducing generics), weights as `arith.constant`
# tensors. Here is the digits MLP of unit 01 (weights elided):

# %%
import torch

from infopt.ir.onnx_io import from_onnx
from infopt.models import digits_cnn, digits_mlp, export_onnx
from infopt.mlir.emit import emit_graph, emittable_ops

mlp = from_onnx(export_onnx(digits_mlp(), torch.zeros(2, 64)))
cnn = from_onnx(export_onnx(digits_cnn(), torch.zeros(2, 1, 8, 8)))
mlp_mlir = emit_graph(mlp)
print(mlir_opt(mlp_mlir.text, "--mlir-elide-elementsattrs-if-larger=4")[:2400])
print("ops the emitter handles:", ", ".join(emittable_ops()))

# %% [markdown]
# Three independent checks hold for every model the emitter handles (the tests run them on the MLP, the CNN, the
# transformer block and ResNet-18): `mlir-opt` parses and verifies the text; xDSL parses it back; and compiled and
# run (section 6) it equals our interpreter to 1e-4. An op the emitter cannot express is an error that names it:

# %%
from infopt.ir import Graph, TensorType
from infopt.mlir.emit import MlirEmitError

parse_module(emit_graph(cnn).text)          # xDSL reads the CNN back
_g = Graph("reduce")
_g.add_input("x", TensorType((2, 3)))
_g.outputs = _g.add_node("ReduceSum", ["x"], {"keepdims": 1}, name="row_sums").outputs
try:
    emit_graph(_g)
except MlirEmitError as err:
    print("MlirEmitError:", str(err)[:160], "...")

# %% [markdown]
# ## 5. Progressive lowering, stage by stage, on one matmul
#
# `infopt.mlir.pipeline.lower(text)` runs named `mlir-opt-19` stages and records the IR after each:
#
# | stage | passes | what changes |
# |---|---|---|
# | `tensors` | `canonicalize` | linalg on tensors, as emitted |
# | `bufferized` | `one-shot-bufferize`, `buffer-results-to-out-params`, `buffer-deallocation-pipeline` | tensors become memrefs; the result becomes an argument written in place |
# | `loops` | `convert-linalg-to-affine-loops` | linalg ops become affine loop nests of scalar loads, arithmetic and stores |
# | `vector` | `affine-super-vectorize` (8 lanes) | the innermost contiguous loops become `vector.transfer_read` / `vector.fma` on `vector<8xf32>` |
# | `llvm` | `lower-affine`, `convert-scf-to-cf`, `convert-vector-to-llvm`, `finalize-memref-to-llvm`, `convert-*-to-llvm` | everything becomes the llvm dialect; a memref becomes a descriptor struct |
# | `llvm-ir` | `mlir-translate --mlir-to-llvmir` | LLVM IR text, ready for clang or llc |
#
# Pick a stage: the IR after it (the lines that stage wrote are marked `+`), and how many ops of each dialect
# each stage leaves.

# %%
from infopt.mlir.matmul import matmul_graph
from infopt.mlir.pipeline import CPU_PIPELINE, lower
from infopt.widgets.mlir_view import stage_viewer

small_mm = emit_graph(matmul_graph(8, 16, 4))
lowering = lower(small_mm.text, CPU_PIPELINE)
stage_viewer(lowering)

# %% [markdown]
# **Running it.** The last stage is LLVM IR of LLVM 19 (Debian's MLIR 19). We hand it to **clang-19** and load the
# shared object with ctypes: the function's `llvm.emit_c_interface` attribute makes MLIR add
# `_mlir_ciface_main(ptr, ptr, ...)`, one pointer per memref, each to a **memref descriptor**
# `{allocated, aligned, offset, sizes[rank], strides[rank]}` that we fill from a numpy array. Why this and not
# the alternatives: `mlir-cpu-runner` calls a `main` that takes no arguments, and prints (we use it for Toy in
# section 10), and llvmlite's JIT is LLVM 22 — the IR does cross (the tests check it parses, verifies and computes
# the same there, given a position-independent target), but staying on one LLVM version is the safe default.

# %%
from infopt.mlir.execute import compile_module, descriptor

compiled_mm = compile_module(small_mm, lowering=lowering)
_r = np.random.default_rng(0)
_a, _b = _r.standard_normal((8, 4)).astype(np.float32), _r.standard_normal((4, 16)).astype(np.float32)
print("max |MLIR - numpy| =", float(np.abs(compiled_mm({"a": _a, "b": _b})["c"] - _a @ _b).max()))
d = descriptor(_a)
print(f"descriptor of a: aligned={d.aligned:#x} offset={d.offset} sizes={list(d.sizes)} strides={list(d.strides)}")
print("compile seconds per stage:", compiled_mm.report())

# %% [markdown]
# ### Exercise 1 — predict `--convert-linalg-to-loops` (2 points)
#
# `convert-linalg-to-loops` is the plainest lowering of linalg: every structured op becomes a loop nest that loads
# the operands the payload reads, runs the payload, and stores the result. Its output follows from the op's
# structure, so you can write it down before running anything.
#
# Write `predict_loops(op)`: given one linalg op on memrefs (an xDSL operation: `linalg.matmul`, `linalg.fill`,
# `linalg.transpose`, `linalg.conv_2d_nchw_fchw`, `linalg.pooling_nchw_max` or `linalg.generic`), return the ops
# that `mlir-opt --convert-linalg-to-loops` writes for it as a dict `{op name: count}`; `arith.constant` (the loop
# bounds) and zero counts are not compared. Decide from the op's structure, without running mlir-opt or xDSL's own
# lowering inside the function. The lowering follows five rules; the counts for each kind of op are yours to derive:
#
# - **loops:** one `scf.for` per dimension of the op's iteration space, a dimension of size 1 included. Every
#   linalg op, named or generic, states its iteration space in its indexing maps (`op.get_indexing_maps()`, one
#   `AffineMapAttr` per operand; `.data` is the `AffineMap`, with `.num_dims` and `.results`);
# - **loads:** one `memref.load` per memref operand whose element the payload reads. A generic's payload is its
#   body (`op.body.block`: block arguments in operand order, `arg.uses` empty when unread). A named op's payload is
#   implicit: run `mlir_opt(text, "--linalg-generalize-named-ops")` once on an example of each in a cell of your
#   own (`cases_module([random_linalg_case(rng, kind, name) for kind in KINDS])` from `infopt.mlir.linalg_cases`
#   writes one of every kind) and read which block arguments its generic form uses — xDSL's own bodies for named
#   ops are not always wired the same way. A scalar operand is a value, not a load;
# - **stores:** one `memref.store`, of the output;
# - **index arithmetic:** one `affine.apply` per index of each load and of each store whose expression is neither a
#   plain loop variable (an `AffineDimExpr`) nor a constant (an `AffineConstantExpr`, which becomes an
#   `arith.constant`); read them off the indexing maps;
# - **payload:** each op of the payload once, `linalg.yield` excluded.
#
# The tests lower random ops of every kind with mlir-opt itself — fresh shapes, strides, payloads and unused inputs
# at every grading — and compare.

# %% solution=true grade_id="predict_loops"
def predict_loops(op) -> dict[str, int]:
    """{op name: count} that --convert-linalg-to-loops writes for the linalg op `op`."""
    ### BEGIN SOLUTION
    from xdsl.dialects.builtin import MemRefType
    from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr

    named = {"linalg.matmul": (3, 3, ["arith.mulf", "arith.addf"], 0),
             "linalg.conv_2d_nchw_fchw": (7, 3, ["arith.mulf", "arith.addf"], 2),
             "linalg.pooling_nchw_max": (6, 2, ["arith.maximumf"], 2)}
    if op.name in named:
        loops, loads, payload, applies = named[op.name]
    elif op.name in ("linalg.fill", "linalg.transpose"):
        (output,) = op.outputs
        loops = len(output.type.get_shape())
        loads, payload, applies = {"linalg.fill": 0, "linalg.transpose": 1}[op.name], [], 0
    else:   # a generic: loads of the memrefs the body reads, an index computation per expression they are read at
        loops = len(op.iterator_types)
        operands = [*op.inputs, *op.outputs]
        stored = [False] * len(op.inputs) + [True] * len(op.outputs)
        loaded = [bool(arg.uses) and isinstance(v.type, MemRefType) for arg, v in zip(op.body.block.args, operands)]
        loads = sum(loaded)
        payload = [inner.name for inner in op.body.block.ops if inner.name != "linalg.yield"]
        applies = sum((ld + st) * sum(not isinstance(e, (AffineDimExpr, AffineConstantExpr)) for e in m.data.results)
                      for m, ld, st in zip(op.get_indexing_maps(), loaded, stored))
    out = {"scf.for": loops, "memref.load": loads, "memref.store": 1, "affine.apply": applies}
    for name in payload:
        out[name] = out.get(name, 0) + 1
    return out
    ### END SOLUTION


# %% grade_id="predict_loops_test" points=2
from infopt.grading.forbid import ANY_PROGRAM
from infopt.mlir.linalg_cases import KINDS, cases_module, loops_counts, random_linalg_case

# mlir-opt by any route: a program, xDSL's own lowering and its loop-nest helpers, MLIR's pass manager in this process
# (IREE's Python bindings) and IREE's in-process compiler
_PREDICT_FORBIDDEN = ("infopt.mlir.linalg_cases:loops_counts", "infopt.mlir.tools:run_tool", ANY_PROGRAM,
                      "xdsl.transforms.convert_linalg_to_loops:*",
                      "xdsl.transforms.convert_linalg_to_loops:ConvertLinalgToLoopsPass",
                      "xdsl.transforms.convert_linalg_to_loops:LowerLinalgStructuredOpPattern",
                      "xdsl.transforms.loop_nest_lowering_utils:*",
                      "iree.compiler._mlir_libs._mlir.passmanager:PassManager", "iree.compiler.passmanager:PassManager",
                      "iree.compiler.api:Session", "iree.compiler.api:Invocation")


def _check_predictions(functions: list[str], hidden: bool) -> None:
    """Lower the functions with mlir-opt (one run) and compare each with predict_loops on its linalg op."""
    text = cases_module(functions)
    truth = loops_counts(text)
    guarded = forbidding(predict_loops, *_PREDICT_FORBIDDEN, exercise="predict_loops",
                         why="decide from the op's structure, without running the lowering")
    for fn in parse_module(text).ops:
        name = fn.sym_name.data
        op = next(o for o in fn.body.block.ops if o.name.startswith("linalg."))
        source = next(f for f in functions if f"@{name}(" in f)
        with case(f"{op.name} ({name})", show=lambda s=source: s, hidden=hidden):
            got = call_student(guarded, op, name="predict_loops", fingerprint=lambda o: str(o))
            check_true(isinstance(got, dict), f"predict_loops must return a dict, got {type(got).__name__}")
            got = {str(k): int(v) for k, v in got.items() if v and k != "arith.constant"}
            want = truth[name]
            for key in sorted(set(got) | set(want)):
                check_true(got.get(key, 0) == want.get(key, 0),
                           f"{key}: mlir-opt wrote {want.get(key, 0)}, you predicted {got.get(key, 0)} "
                           f"(mlir-opt wrote {want}; you predicted {got})")


_visible = np.random.default_rng(3)
_check_predictions([random_linalg_case(_visible, kind, f"{kind}_example", unit_dim=(kind == "conv"))
                    for kind in KINDS], hidden=False)
print("predict_loops: visible tests passed")
### BEGIN HIDDEN TESTS
_rng = grading_rng(1)
_cases = [random_linalg_case(_rng, kind, f"case{i}", unit_dim=bool(i % 2)) for i, kind in enumerate(KINDS * 2)]
_check_predictions(_cases, hidden=True)
# In every grading, generics the random ones may not draw: a first input that covers fewer loops than the op has
# (a broadcast), an elementwise payload that reads its output, a reduction that never reads it, and a payload that
# repeats an op.
_GENERIC = ('func.func @{name}(%a: memref<{a}xf32>, %b: memref<3x5xf32>, %c: memref<{c}xf32>) {{\n'
            '  linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> ({amap})>, affine_map<(d0, d1) -> (d0, d1)>, '
            'affine_map<(d0, d1) -> ({cmap})>], iterator_types = [{iters}]}} ins(%a, %b : memref<{a}xf32>, '
            'memref<3x5xf32>) outs(%c : memref<{c}xf32>) {{\n'
            '  ^bb0(%{name}_x: f32, %{name}_y: f32, %{name}_o: f32):\n{body}'
            '  }}\n  return\n}}\n')
_check_predictions([
    _GENERIC.format(name="broadcast_first_input", a="5", amap="d1", c="3x5", cmap="d0, d1",
                    iters='"parallel", "parallel"',
                    body="    %s = arith.mulf %broadcast_first_input_x, %broadcast_first_input_y : f32\n"
                         "    linalg.yield %s : f32\n"),
    _GENERIC.format(name="parallel_reads_out", a="3x5", amap="d0, d1", c="3x5", cmap="d0, d1",
                    iters='"parallel", "parallel"',
                    body="    %s = arith.addf %parallel_reads_out_x, %parallel_reads_out_o : f32\n"
                         "    linalg.yield %s : f32\n"),
    _GENERIC.format(name="reduction_ignores_out", a="3x5", amap="d0, d1", c="3", cmap="d0",
                    iters='"parallel", "reduction"',
                    body="    %s = arith.subf %reduction_ignores_out_x, %reduction_ignores_out_y : f32\n"
                         "    linalg.yield %s : f32\n"),
    _GENERIC.format(name="repeated_payload_op", a="3x5", amap="d0, d1", c="3x5", cmap="d0, d1",
                    iters='"parallel", "parallel"',
                    body="    %s = arith.addf %repeated_payload_op_x, %repeated_payload_op_y : f32\n"
                         "    %t = arith.addf %s, %repeated_payload_op_x : f32\n"
                         "    %u = arith.addf %t, %s : f32\n"
                         "    linalg.yield %u : f32\n"),
], hidden=True)
# and generics whose operands are not all plain memrefs indexed by loop variables: a scalar input (a value, never a
# load), an input read at an expression of the loops (an affine.apply), and the same input left unread (no load, so
# no index to compute)
_WINDOW = ('func.func @{name}(%a: memref<{n}xf32>, %b: memref<{r}x{c}xf32>, %o: memref<{r}x{c}xf32>) {{\n'
           '  linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0 + d1)>, affine_map<(d0, d1) -> (d0, d1)>, '
           'affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}} ins(%a, %b : '
           'memref<{n}xf32>, memref<{r}x{c}xf32>) outs(%o : memref<{r}x{c}xf32>) {{\n'
           '  ^bb0(%{name}_x: f32, %{name}_y: f32, %{name}_z: f32):\n'
           '    %s = arith.{op} %{name}_{first}, %{name}_y : f32\n    linalg.yield %s : f32\n  }}\n  return\n}}\n')
_r, _c = (int(v) for v in _rng.integers(2, 6, 2))
_check_predictions([
    f'func.func @scalar_input(%a: memref<{_r}x{_c}xf32>, %s: f32, %o: memref<{_r}x{_c}xf32>) {{\n'
    f'  linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>, '
    f'affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}} ins(%a, %s : '
    f'memref<{_r}x{_c}xf32>, f32) outs(%o : memref<{_r}x{_c}xf32>) {{\n'
    f'  ^bb0(%scalar_input_x: f32, %scalar_input_s: f32, %scalar_input_z: f32):\n'
    f'    %p = arith.mulf %scalar_input_x, %scalar_input_s : f32\n    linalg.yield %p : f32\n  }}\n  return\n}}\n',
    _WINDOW.format(name="window_read", n=_r + _c - 1, r=_r, c=_c, op="addf", first="x"),
    _WINDOW.format(name="window_unread", n=_r + _c - 1, r=_r, c=_c, op="mulf", first="y"),
], hidden=True)
# and each kind of index alone: one loop variable scaled or shifted, a constant, an output read and stored at an
# expression (a load and a store: an index computation each) or only stored at one, and one buffer passed twice
_GEN2 = ('func.func @{name}(%a: memref<{an}xf32>, %b: memref<{r}x{c}xf32>, %o: memref<{on}xf32>) {{\n'
         '  linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> ({amap})>, affine_map<(d0, d1) -> (d0, d1)>, '
         'affine_map<(d0, d1) -> ({omap})>], iterator_types = ["parallel", "parallel"]}} ins(%a, %b : '
         'memref<{an}xf32>, memref<{r}x{c}xf32>) outs(%o : memref<{on}xf32>) {{\n'
         '  ^bb0(%{name}_x: f32, %{name}_y: f32, %{name}_z: f32):\n'
         '    %s = arith.addf %{name}_x, %{name}_{second} : f32\n    linalg.yield %s : f32\n  }}\n  return\n}}\n')
_k = int(_rng.integers(2, 4))
_plain = dict(r=_r, c=_c, an=f"{_r}x{_c}", amap="d0, d1", on=f"{_r}x{_c}", omap="d0, d1", second="y")
_check_predictions([
    _GEN2.format(name="one_var_scaled", **dict(_plain, an=f"{_k * _r}x{_c}", amap=f"d0 * {_k}, d1")),
    _GEN2.format(name="one_var_shifted", **dict(_plain, an=f"{_r}x{_c + _k}", amap=f"d0, d1 + {_k}")),
    _GEN2.format(name="constant_index", **dict(_plain, an=f"{_k}x{_c}", amap=f"{_k - 1}, d1")),
    _GEN2.format(name="output_read_at_expr", **dict(_plain, on=f"{_r + _k}x{_c}", omap=f"d0 + {_k}, d1", second="z")),
    _GEN2.format(name="output_stored_at_expr", **dict(_plain, on=f"{_r + _k}x{_c}", omap=f"d0 + {_k}, d1")),
    f'func.func @one_buffer_twice(%a: memref<{_r}x{_c}xf32>, %o: memref<{_r}x{_c}xf32>) {{\n'
    f'  linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, '
    f'affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}} ins(%a, %a : '
    f'memref<{_r}x{_c}xf32>, memref<{_r}x{_c}xf32>) outs(%o : memref<{_r}x{_c}xf32>) {{\n'
    f'  ^bb0(%one_buffer_twice_x: f32, %one_buffer_twice_y: f32, %one_buffer_twice_z: f32):\n'
    f'    %p = arith.mulf %one_buffer_twice_x, %one_buffer_twice_y : f32\n    linalg.yield %p : f32\n  }}\n'
    f'  return\n}}\n',
], hidden=True)
### END HIDDEN TESTS

# %% [markdown]
# ## 6. Bufferization: when tensors become memrefs
#
# Tensors are *values*: `tensor.insert %v into %t[%i]` returns a new tensor and leaves `%t` as it was. Memory is
# *buffers*. **Bufferization** gives every tensor a buffer, and the question it answers for every op with a
# destination (`outs` of a linalg op, the destination of an insert) is: may the result be written into the
# destination's buffer (in place, free), or does it need a new buffer (an allocation, and a copy of the
# destination's contents when they are needed)? In place is wrong when the old value is still read afterwards —
# the read would see the new contents — or when the buffer belongs to the caller and may not be written.
#
# MLIR's **one-shot bufferization** decides for the whole function at once. Asked for just its analysis, it marks
# each operand `"true"` (in place) or `"false"` (copy):

# %%
from infopt.mlir.bufferize import dest_ops, mlir_decisions, parse_program, reference_decisions, run_buffers, run_values

BUFFER_EXAMPLE = """func.func @f(%x: tensor<4xf32>, %ro: tensor<4xf32> {bufferization.writable = false}) -> (tensor<4xf32>, tensor<4xf32>) {
  %c0 = arith.constant 0 : index
  %v = arith.constant 7.0 : f32
  %a = tensor.insert %v into %x[%c0] : tensor<4xf32>
  %s = tensor.extract %x[%c0] : tensor<4xf32>
  %b = linalg.fill ins(%s : f32) outs(%ro : tensor<4xf32>) -> tensor<4xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}
"""
for line in mlir_opt(BUFFER_EXAMPLE, "--one-shot-bufferize=test-analysis-only bufferize-function-boundaries"
                     ).splitlines():
    if "__inplace_operands_attr__" in line:
        print(line.strip())

# %% [markdown]
# Both writes get `"false"`: the insert because `%x` is read (extracted) after it; the fill because `%ro` is the
# caller's buffer, marked not writable. Run with buffers, a wrong decision shows: with the insert in place, the extract reads
# 7.0 instead of the caller's `x[0]`; with the fill in place, the caller's `%ro` is overwritten.

# %%
_f = parse_program(BUFFER_EXAMPLE)
_x, _ro = np.arange(4, dtype=np.float32), np.full(4, 5.0, np.float32)
print("value semantics:        ", [v.tolist() for v in run_values(_f, [_x, _ro])])
print("both copy (one-shot):   ", [v.tolist() for v in run_buffers(_f, [_x, _ro], [False, False]).results])
print("insert in place (wrong):", [v.tolist() for v in run_buffers(_f, [_x, _ro], [True, False]).results])
print("fill in place: the caller's %ro becomes", run_buffers(_f, [_x, _ro], [False, True]).arguments[1].tolist())

# %% [markdown]
# ### Exercise 2 — in place or not (3 points)
#
# Programs here are one `func.func` over `tensor<8xf32>` values with `tensor.empty`, `linalg.fill`,
# `tensor.insert`, `tensor.extract`, elementwise `linalg.generic` (inputs in `ins`, result in `outs`), `arith`
# scalars and `func.return`.
#
# Write `inplace_decisions(func)`: for the ops of `func` that have a destination, in program order
# (`dest_ops(func)` lists them), return a list of bools — `True` when the op writes into its destination's buffer,
# `False` when it gets a new buffer. Decide in program order; an op written in place shares its destination's
# buffer from then on. An op writes in place unless one of two things holds:
#
# 1. its destination's buffer is the buffer of a function argument that is not writable
#    (`is_writable_argument(func, arg)` is False): the caller's data must never be overwritten;
# 2. a value that lives in the destination's buffer is read after the op (in program order). Values living in a
#    buffer are the argument or `tensor.empty` that made it and every result written into it in place, not just
#    the destination itself.
#
# Reads are `tensor.extract`, an insert's destination (the insert copies the other elements through), a
# `linalg.generic`'s inputs and `func.return`. The `outs` of a `linalg.fill` and of these elementwise generics only overwrite: they
# are not reads. Do not call the library's `reference_decisions` or `mlir_decisions`. Helpers from
# `infopt.mlir.bufferize`: `destination(op)`, `dest_ops(func)`,
# `is_writable_argument(func, value)`; `value.uses` holds `Use`s with `.operation` and `.index`; an op's position is
# its index in `list(func.body.block.ops)`.
#
# The tests are about behaviour: they run each program with buffers following your decisions (`run_buffers`) on
# random inputs. The results must equal value semantics, read-only arguments must be unchanged, and the number of
# new buffers must equal the number mlir-opt's one-shot bufferization makes (ties between two equal writes may go
# either way). Programs are random at every grading.

# %% solution=true grade_id="inplace_decisions"
from xdsl.ir import BlockArgument

from infopt.mlir.bufferize import destination, is_writable_argument


def inplace_decisions(func) -> list[bool]:
    """True (write in place) or False (new buffer) for each destination op of `func`, in program order."""
    ### BEGIN SOLUTION
    ops = list(func.body.block.ops)
    position = {op: k for k, op in enumerate(ops)}
    home = {arg: arg for arg in func.body.block.args}           # value -> the value that made its buffer
    living = {arg: [arg] for arg in func.body.block.args}       # buffer -> the values living in it

    def is_read(use) -> bool:
        user = use.operation
        overwrites = user.name in ("linalg.fill", "linalg.generic") and use.index >= len(user.inputs)
        return not overwrites

    out = []
    for op in ops:
        dest = destination(op)
        if dest is None:
            for r in op.results:
                home[r], living[r] = r, [r]
            continue
        buf = home[dest]
        read_only = isinstance(buf, BlockArgument) and not is_writable_argument(func, buf)
        read_later = any(is_read(u) and position[u.operation] > position[op] for v in living[buf] for u in v.uses)
        inplace = not (read_only or read_later)
        (result,) = op.results
        if inplace:
            home[result] = buf
            living[buf].append(result)
        else:
            home[result], living[result] = result, [result]
        out.append(inplace)
    return out
    ### END SOLUTION


# %% grade_id="inplace_decisions_test" points=3
from infopt.grading.forbid import ANY_PROGRAM
from infopt.mlir.bufferize import is_writable_argument, random_program

_BUF_FORBIDDEN = ("infopt.mlir.bufferize:reference_decisions", "infopt.mlir.bufferize:mlir_decisions",
                  "infopt.mlir.bufferize:reads", ANY_PROGRAM)


def _check_decisions(text: str, label: str, seed: int, hidden: bool, want_new: int | None = None) -> None:
    """Run `text` with the student's decisions: values, read-only arguments and the number of new buffers."""
    func = parse_program(text)
    guarded = forbidding(inplace_decisions, *_BUF_FORBIDDEN, exercise="inplace_decisions",
                         why="decide the in-place rule yourself")
    with case(label, show=lambda: text, hidden=hidden):
        got = call_student(guarded, func, name="inplace_decisions", fingerprint=lambda f: str(f))
        n = len(dest_ops(func))
        check_true(isinstance(got, (list, tuple)) and len(got) == n,
                   f"inplace_decisions must return a list of {n} bools (one per destination op), got {got!r}")
        got = [bool(g) for g in got]
        r = np.random.default_rng(seed)
        ins = [r.standard_normal(8).astype(np.float32) for _ in func.body.block.args]
        run = run_buffers(func, ins, got)
        want = run_values(func, ins)
        for k, (a, b) in enumerate(zip(run.results, want)):
            check_true(np.array_equal(a, b, equal_nan=True),
                       f"with your decisions {got}, result {k} differs from value semantics: {a} instead of {b} "
                       "(an op wrote in place while a value living in that buffer was still read later)")
        for arg, before, after in zip(func.body.block.args, ins, run.arguments):
            if not is_writable_argument(func, arg):
                check_true(np.array_equal(before, after),
                           f"with your decisions {got}, the read-only argument %{arg.name_hint} was overwritten")
        best = n - sum(reference_decisions(func)) if want_new is None else want_new
        new = n - sum(got)
        check_true(new == best, f"your decisions {got} make {new} new buffers; one-shot bufferization makes {best} "
                   "(a write that could go in place got a copy)")


_check_decisions(BUFFER_EXAMPLE.replace("tensor<4xf32>", "tensor<8xf32>"), "the example above", 0, False,
                 want_new=2)
for _seed in (4, 7):
    _text = random_program(np.random.default_rng(_seed), n_ops=7)
    _one_shot = mlir_decisions(_text)
    _check_decisions(_text, f"random program (seed {_seed})", _seed, False, want_new=len(_one_shot) - sum(_one_shot))
print("inplace_decisions: visible tests passed")
### BEGIN HIDDEN TESTS
_T8 = "tensor<8xf32>"
_STRUCTURAL = {
    # an insert whose destination is extracted afterwards must copy
    "read after the write": f"""func.func @p(%x: {_T8}) -> ({_T8}) {{
  %c1 = arith.constant 1 : index
  %v = arith.constant 3.0 : f32
  %a = tensor.insert %v into %x[%c1] : {_T8}
  %s = tensor.extract %x[%c1] : {_T8}
  %b = tensor.insert %s into %a[%c1] : {_T8}
  return %b : {_T8}
}}""",
    # a read-only argument, written once and never read again
    "read-only argument": f"""func.func @p(%x: {_T8} {{bufferization.writable = false}}, %y: {_T8}) -> ({_T8}, {_T8}) {{
  %v = arith.constant 2.0 : f32
  %a = linalg.fill ins(%v : f32) outs(%x : {_T8}) -> {_T8}
  %b = linalg.fill ins(%v : f32) outs(%y : {_T8}) -> {_T8}
  return %a, %b : {_T8}, {_T8}
}}""",
    # t lives in the buffer of e; writing into e again while t is still read needs a copy
    "an alias is read later": f"""func.func @p(%x: {_T8}) -> ({_T8}, {_T8}) {{
  %c2 = arith.constant 2 : index
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  %e = tensor.empty() : {_T8}
  %t = linalg.fill ins(%one : f32) outs(%e : {_T8}) -> {_T8}
  %u = linalg.fill ins(%two : f32) outs(%e : {_T8}) -> {_T8}
  %s = tensor.extract %t[%c2] : {_T8}
  %w = tensor.insert %s into %x[%c2] : {_T8}
  return %w, %u : {_T8}, {_T8}
}}""",
    # a generic's outs only overwrite: the fill may go in place although %x is the generic's destination later
    "a generic's outs are not reads": f"""func.func @p(%x: {_T8}, %y: {_T8}) -> ({_T8}) {{
  %one = arith.constant 1.0 : f32
  %a = linalg.fill ins(%one : f32) outs(%x : {_T8}) -> {_T8}
  %g = linalg.generic {{indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}} ins(%a, %y : {_T8}, {_T8}) outs(%x : {_T8}) {{
  ^bb0(%p: f32, %q: f32, %o: f32):
    %z = arith.addf %p, %q : f32
    linalg.yield %z : f32
  }} -> {_T8}
  return %g : {_T8}
}}""",
    # later fills of the same value only overwrite: no copy is needed for the first one
    "overwrites are not reads": f"""func.func @p(%x: {_T8}) -> ({_T8}) {{
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  %a = linalg.fill ins(%one : f32) outs(%x : {_T8}) -> {_T8}
  %b = linalg.fill ins(%two : f32) outs(%x : {_T8}) -> {_T8}
  return %b : {_T8}
}}""",
}
_rng = grading_rng(2)
for _label, _text in _STRUCTURAL.items():
    _check_decisions(_text, _label, int(_rng.integers(1 << 30)), True)
for _trial in range(8):
    _text = random_program(_rng, n_ops=int(_rng.integers(4, 10)))
    _check_decisions(_text, f"random program #{_trial}", int(_rng.integers(1 << 30)), True)
### END HIDDEN TESTS

# %% [markdown]
# ## 7. Whole models
#
# The same stages compile whole models. For models the affine vectorizer is left out (`MODEL_PIPELINE`): in
# MLIR 19 it rejects the conv's reduction nest and, worse, vectorizes a stride-2 pooling window as if it were
# contiguous and gives wrong numbers (both are cases in the course's own tests); clang's own loop vectorizer
# vectorizes the scalar loops at `-O2` instead. Compiled, the MLP and the CNN give the interpreter's answer:

# %%
from infopt.ir import run_graph
from infopt.mlir.pipeline import MODEL_PIPELINE
from infopt.mlir.execute import compile_module
from infopt.data import load_digits_split

digits = load_digits_split()
_xs = {"mlp": digits.x_test[:2].reshape(2, 64), "cnn": digits.x_test[:2]}
for name, graph in (("mlp", mlp), ("cnn", cnn)):
    compiled = compile_module(emit_graph(graph), MODEL_PIPELINE)
    feeds = {graph.inputs[0]: _xs[name].astype(np.float32)}
    got, want = compiled(feeds)[graph.outputs[0]], run_graph(graph, feeds)[graph.outputs[0]]
    print(f"{name}: max |MLIR - interpreter| = {float(np.abs(got - want).max()):.1e}; compile {compiled.report()}")

# %% [markdown]
# ## 8. A faster matmul: tiling and vectorization with the transform dialect
#
# The pipeline above is honest but slow: loops in the textbook order, one multiply-add at a time. Real MLIR
# compilers schedule the matmul with the **transform dialect** — a second MLIR program that names the ops to
# transform and says how (`infopt.mlir.matmul.transform_script`):
#
# 1. `tile_using_for` by (64, 128, 64): blocks of (M, N, K) that fit the caches (unit 06);
# 2. `promote` B's tile into a contiguous buffer: at N = 512 B's rows are 2 KiB apart and a tile's rows fall into
#    a few L1 sets, evicting each other;
# 3. `tile_using_for` again by (4, 16, 32): the register tile one `vector.contract` computes;
# 4. `vectorize`, then lower the contraction to outer products — `vector.fma` on `vector<16xf32>` — with the
#    accumulators kept in registers across the 32 steps of K.
#
# Timed side by side on one thread, interleaved (unit 03's method), at N = 256:

# %%
from threadpoolctl import threadpool_limits

from infopt.mlir.matmul import matmul_pipelines, matmul_reading, transform_script
from infopt.runtime import interleaved

print(transform_script((64, 128, 64), (4, 16, 32)))
N = 256
_a = np.random.default_rng(1).standard_normal((N, N)).astype(np.float32)
_b = np.random.default_rng(2).standard_normal((N, N)).astype(np.float32)
_c = np.empty((N, N), np.float32)
mm_graph = emit_graph(matmul_graph(N, N, N))
runs = {}
for name, stages in matmul_pipelines().items():
    compiled = compile_module(mm_graph, stages)
    compiled.function.call(_a, _b, _c)
    assert np.allclose(_c, _a @ _b, atol=1e-3), name
    runs[name] = lambda f=compiled.function: f.call(_a, _b, _c)
with threadpool_limits(1):
    runs["numpy (1 thread)"] = lambda: _a @ _b
    samples = interleaved(runs, repeats=5)
gflops = {k: 2 * N**3 / min(v) / 1e9 for k, v in samples.items()}
go.Figure(go.Bar(x=list(gflops), y=list(gflops.values()), text=[f"{v:.1f}" for v in gflops.values()])).update_layout(
    title=f"{N}x{N} float32 matmul, one thread (GFLOP/s, best of 5)", yaxis_title="GFLOP/s", height=330).show()
print(matmul_reading(gflops))

# %% [markdown]
# The benchmark (`benchmarks/mlir.py`, output shipped in `data/bench.json`) measures the same at N = 256 and 512
# with more repeats, next to IREE, onnxruntime and unit 03's LLVM path:

# %%
import json
from pathlib import Path

bench = json.loads(Path("data/bench.json").read_text())
print(f"measured {bench['when']} on {bench['machine']}")
for n, ratio in bench["matmul_numpy_time_over_mlir_tiled_time_1t"].items():
    print(f"N = {n}: numpy's time / the tiled MLIR pipeline's time = {ratio:.2f} (one thread, paired median: "
          f"{'the pipeline is faster' if ratio > 1 else 'numpy is faster'})")

# %% [markdown]
# **Tile and fuse.** A layer is more than a matmul: `relu(a @ b + bias)` is emitted as three linalg ops (a matmul
# into a filled accumulator, a broadcasting add, a max), and lowered as they are, each one writes a whole M x N
# result that the next reads back. Linalg's answer is *tile and fuse* (`infopt.mlir.fusion`): a transform script
# tiles the last op (the ReLU) into a loop over output tiles, then fuses each producer into that loop, so the add,
# the matmul and the fill compute just the tile their consumer reads. The same layer, both ways:

# %%
from infopt.mlir.fusion import fuse_script, intermediate_bytes, layer_graph, layer_pipelines
from infopt.mlir.pipeline import lower

FM, FN, FK, FTILE = 128, 128, 64, (16, 32)
layer = emit_graph(layer_graph(FM, FN, FK))
print(fuse_script(FTILE))
layer_runs, layer_bytes = {}, {}
_r = np.random.default_rng(3)
layer_feeds = {"a": _r.standard_normal((FM, FK)).astype(np.float32),
               "b": _r.standard_normal((FK, FN)).astype(np.float32), "bias": _r.standard_normal(FN).astype(np.float32)}
layer_want = np.maximum(layer_feeds["a"] @ layer_feeds["b"] + layer_feeds["bias"], 0)
for name, stages in layer_pipelines(FM, FN, FTILE).items():
    stages_ir = lower(layer.text, stages)
    loops = op_counts(stages_ir["bufferized"])
    layer_bytes[name] = intermediate_bytes(stages_ir["bufferized"])
    compiled_layer = compile_module(layer, stages, lowering=stages_ir)
    got = next(iter(compiled_layer(layer_feeds).values()))
    print(f"{name:16} linalg ops {sum(n for op, n in loops.items() if op.startswith('linalg.'))}, "
          f"tile loops {loops.get('scf.for', 0) + loops.get('scf.forall', 0)}, buffers it allocates "
          f"{layer_bytes[name] / 1024:.0f} KiB, max |error| {float(np.abs(got - layer_want).max()):.1e}")
    layer_runs[name] = lambda f=compiled_layer: f(layer_feeds)
with threadpool_limits(1):
    layer_samples = interleaved(layer_runs, repeats=7)
layer_ms = {k: float(np.median(v)) * 1e3 for k, v in layer_samples.items()}
ratio = layer_ms["unfused"] / layer_ms["tiled and fused"]
print(f"median per call: unfused {layer_ms['unfused']:.2f} ms, tiled and fused {layer_ms['tiled and fused']:.2f} ms "
      f"(unfused time / fused time = {ratio:.2f}, one thread)")
print(f"Fusion shrinks what the layer allocates from {layer_bytes['unfused'] // 1024} KiB (two whole {FM}x{FN} "
      f"intermediates) to {layer_bytes['tiled and fused'] // 1024} KiB (two {FTILE[0]}x{FTILE[1]} tiles); here it "
      + ("also runs faster: the intermediates no longer travel through memory, and the loops in the textbook order "
         "touch less of it at a time." if ratio > 1.1 else
         "does not run faster: at this size the intermediates fit the caches anyway, and the matmul's loops, "
         "in the textbook order in both, dominate the time." if ratio > 0.9 else
         "runs slower: the fused loop recomputes nothing but its tile loop adds overhead, and the matmul's loops, "
         "in the textbook order in both, dominate the time."))

# %% [markdown]
# ## 9. Affine analysis: dependences, interchange and tiling
#
# The `affine` dialect restricts loop bounds and indices to affine functions of the loop variables, so questions
# about the loops have exact answers. The first is **dependences**: two accesses to the same element, one of them
# (or both) a store. A dependence is described, per loop, by the range of its **distance** — how many iterations later the
# second access happens. `infopt.mlir.affine` computes them for uniform nests (indices `iv + c`), and mlir-opt's
# own analysis (`--test-memref-dependence-check`) agrees on random nests (the tests check 30):

# %%
from infopt.mlir.affine import (Loop, Nest, Ref, Statement, dependences, mlir_dependences, mlir_parallel_loops,
                                mlir_permuted, parallel_loops, tiling_is_legal)

A = lambda *ix: Ref("A", tuple(ix))  # noqa: E731
skewed = Nest((Loop("i", 1, 10), Loop("j", 0, 9)),
              (Statement(A(("i", 0), ("j", 0)), (A(("i", -1), ("j", 1)),)),), {"A": (10, 10)})
print(skewed.text())
print("ours:   ", [(d.src, d.dst, d.depth, d.text()) for d in dependences(skewed)])
print("mlir:   ", [(d.src, d.dst, d.depth, d.text()) for d in mlir_dependences(skewed)])
print("parallel loops — ours:", parallel_loops(skewed), " mlir-opt --affine-parallelize:", mlir_parallel_loops(skewed))

# %% [markdown]
# `A[i][j]` needs `A[i-1][j+1]`, written one `i` earlier and one `j` *later*: distance `(1, -1)`. In the original
# order the first nonzero component is `+1` — the dependence goes forward in time, fine. Swap the loops and the
# vector reads `(-1, 1)`: the value would be read before it is written. That is the **interchange** rule; tiling
# needs more (every component non-negative, so any order of tiles is fine), and the inner loop `j` carries no
# dependence, so it may run in parallel.
#
# `mlir-opt --test-loop-permutation` permutes whatever it is given — legality is the caller's job:

# %%
print(mlir_permuted(skewed, (1, 0)).split("func.func")[1][:420])
print("tiling legal:", tiling_is_legal([d.components for d in dependences(skewed)]))

# %% [markdown]
# ### Exercise 3 — may these loops be interchanged? (2 points)
#
# Write `interchange_is_legal(deps, perm)`. `deps` is a list of dependences, each a tuple with one component per
# loop (outermost first); a component is a pair `(lb, ub)`, the range of the dependence distance along that loop,
# with `None` for an unbounded side — as mlir-opt prints them. `perm` is the new order: the loop that becomes the
# k-th (outermost first) is the original loop `perm[k]`. Return `True` when the reordered nest computes the same
# thing, by the test MLIR's `isValidLoopInterchangePermutation` applies:
#
# - for every dependence, read its components in the new order and find the first lower bound that is not zero:
#   it must be positive (the dependence still goes forward);
# - a lower bound of `None` counts as negative (the distance could be anything);
# - a dependence whose lower bounds are all zero never forbids a permutation (it stays within one iteration).
#
# Return a `bool`. The tests compare with the library's rule on random dependences, including three-loop
# permutations where reading `perm` backwards gives the other answer. (mlir-opt's `--test-loop-permutation` takes
# the inverse: `permutation-map[i]` is the new position of loop `i`; `infopt.mlir.affine.mlir_permutation_map`
# converts.)

# %% solution=true grade_id="interchange"
def interchange_is_legal(deps: list, perm: tuple) -> bool:
    """Does reordering the loops as `perm` keep every dependence lexicographically non-negative?"""
    ### BEGIN SOLUTION
    for comps in deps:
        for k in perm:
            lb = comps[k][0]
            if lb is None or lb < 0:
                return False
            if lb > 0:
                break
    return True
    ### END SOLUTION


# %% grade_id="interchange_test" points=2
from infopt.mlir import affine as _affine


def _check_interchange(deps: list, perm: tuple, label: str, hidden: bool) -> None:
    want = _affine.interchange_is_legal(deps, perm)
    guarded = forbidding(interchange_is_legal, "infopt.mlir.affine:interchange_is_legal",
                         "infopt.mlir.affine:tiling_is_legal", exercise="interchange_is_legal")
    with case(label, show=lambda: f"deps = {deps}\nperm = {perm}", hidden=hidden):
        got = call_student(guarded, [tuple(c) for c in deps], tuple(perm), name="interchange_is_legal")
        check_true(isinstance(got, (bool, np.bool_)), f"interchange_is_legal must return a bool, got {got!r}")
        check_equal(bool(got), want, name=f"interchange_is_legal(deps, perm={perm})")


_skew = [d.components for d in dependences(skewed)]
_check_interchange(_skew, (0, 1), "the skewed nest, original order", False)
_check_interchange(_skew, (1, 0), "the skewed nest, interchanged", False)
_check_interchange([((0, 0), (1, 3), (-2, -1))], (0, 1, 2), "carried by the middle loop", False)
_check_interchange([((0, 0), (1, 3), (-2, -1))], (2, 0, 1), "the negative loop moved outermost", False)
print("interchange_is_legal: visible tests passed")
### BEGIN HIDDEN TESTS
_rng = grading_rng(3)


def _component(kind: str) -> tuple:
    lo, hi = int(_rng.integers(1, 4)), int(_rng.integers(4, 8))
    return {"zero": (0, 0), "pos": (lo, hi), "neg": (-hi, -lo), "zero_or_pos": (0, hi), "mixed": (-lo, hi),
            "unbounded": (None, hi), "unbounded_pos": (lo, None)}[kind]


_structured = [
    ([(_component("zero"), _component("zero_or_pos"), _component("neg"))], (0, 2, 1)),   # scan past a zero lb
    ([(_component("zero"), _component("pos"), _component("neg"))], (0, 2, 1)),
    ([(_component("unbounded"), _component("pos"))], (0, 1)),                             # None counts as negative
    ([(_component("pos"), _component("unbounded"))], (1, 0)),
    ([(_component("zero"), _component("zero"), _component("zero"))], (2, 1, 0)),          # all zero: never forbids
    ([(_component("zero"), _component("zero"))], (1, 0)),
    ([(_component("neg"), _component("pos"), _component("zero"))], (1, 2, 0)),            # perm vs its inverse:
    ([(_component("neg"), _component("pos"), _component("zero"))], (2, 0, 1)),            # the inverse order gives
    ([(_component("pos"), _component("neg"), _component("zero"))], (2, 0, 1)),            # the other answer here
    ([(_component("zero_or_pos"), _component("neg"))], (0, 1)),                           # a zero lb is not positive:
    ([(_component("zero"), _component("neg"), _component("zero_or_pos"))], (0, 2, 1)),    # scan on past (0, hi)
]
for _k, (_deps, _perm) in enumerate(_structured):
    _check_interchange(_deps, _perm, f"hidden structured case #{_k}", True)
_kinds = ["zero", "pos", "neg", "zero_or_pos", "mixed", "unbounded", "unbounded_pos"]
for _trial in range(40):
    _n = int(_rng.integers(2, 4))
    _deps = [tuple(_component(str(_rng.choice(_kinds))) for _ in range(_n)) for _ in range(int(_rng.integers(1, 4)))]
    _check_interchange(_deps, tuple(int(p) for p in _rng.permutation(_n)), f"hidden random case #{_trial}", True)
### END HIDDEN TESTS

# %% [markdown]
# ## 10. Toy: MLIR's tutorial in xDSL
#
# MLIR's [Toy tutorial](https://mlir.llvm.org/docs/Tutorials/Toy/) builds a compiler for a tiny tensor language in
# seven chapters. `infopt.mlir.toy` condenses it in xDSL:
#
# | chapter | the tutorial | here |
# |---|---|---|
# | 1 | the Toy language, its lexer, parser and AST | `toy.frontend.parse_toy` (just `main`, `var`, literals, `transpose`, `+`, `*`, `print`) |
# | 2 | emitting the Toy dialect with ODS | `toy.dialect` (IRDL in Python) and `toy.frontend.emit_toy` |
# | 3 | canonicalization with rewrite patterns (`transpose(transpose(x))`, reshape folding) | `toy.patterns`; exercise 4 writes a fold of your own |
# | 4 | interfaces: inlining and shape inference | `toy.shapes.infer_shapes` through the `ShapeInference` interface (no calls, so nothing to inline); exercise 5 writes the pass |
# | 5 | partial lowering to `affine`, `memref`, `arith` (print stays) | `toy.lower.lower_to_affine` |
# | 6 | lowering to LLVM and running (JIT) | `lower_print` + mlir-opt-19 + `mlir-cpu-runner-19` |
# | 7 | adding a struct type | not condensed |
#
# What is left out, and why: the tutorial's C++ (ODS, the pass registration, the JIT) becomes Python with the same
# structure, so the ideas carry over but not the build; chapter 4's inliner has nothing to do in a language whose
# programs are one function; and chapter 7's struct type adds a type to the dialect, which section 11 does for
# real with the `npu` dialect. The chapters you act on rather than watch are 3 (exercise 4), 4 (exercise 5: the
# shape-inference pass, written and registered by you) and 5 (the lowering, run natively at the end of this
# section).

# %%
from infopt.mlir.toy import canonicalize, emit_toy, infer_shapes, lower_print, lower_to_affine, run_toy, run_toy_native

TOY_SOURCE = """
def main() {
  var a = [[1, 2, 3], [4, 5, 6]];
  var b<3, 2> = [1, 2, 3, 4, 5, 6];
  var c = transpose(transpose(a));
  print(transpose(a) * b);
  print(c + a);
}
"""
toy_module = emit_toy(TOY_SOURCE)
print(print_ir(toy_module))
toy_expected = run_toy(toy_module)

# %% [markdown]
# The front end cannot know the shape of `transpose(a)`: results are `tensor<*xf64>` (unranked) until shape
# inference. `transpose(transpose(a))` is plainly `a`, and `b<3, 2>` is a reshape of a constant: both are what the
# chapter-3 canonicalizations remove. An xDSL rewrite pattern is a class with `match_and_rewrite(op, rewriter)`; the
# driver (`PatternRewriteWalker`) offers it every op until nothing changes. Here is the first of them, written in
# this notebook — it matches a transpose whose operand is another transpose, and makes every use of the outer one
# read `x`:

# %%
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from infopt.mlir.toy import TransposeOp, apply_patterns


class TransposeOfTranspose(RewritePattern):
    """transpose(transpose(x)) -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        inner = op.arg.owner
        if isinstance(inner, TransposeOp):
            rewriter.replace(op, [], [inner.arg])


print(print_ir(apply_patterns(emit_toy(TOY_SOURCE), [TransposeOfTranspose()])))

# %% [markdown]
# Three things in it hold for every pattern. The **match** is a condition on the op and what defines its operands
# (`op.arg.owner`), and a pattern that does not match returns without touching anything. The **rewrite** goes
# through the rewriter (which tells the driver what changed, so it can offer the new ops to the patterns again).
# And the pattern **erases nothing it did not match**: the inner transpose may have other users; once nobody uses
# it, `apply_patterns` removes it as dead code.
#
# ### Exercise 4 — a fold with a legality rule (3 points)
#
# A transpose of a constant can be computed at compile time. Write `FoldConstantTranspose`, an xDSL
# `RewritePattern` that replaces `toy.transpose` of a `toy.constant` by a new `toy.constant` holding the
# transposed data. Its rule:
#
# 1. it applies only when the transpose's operand is defined by a `toy.constant` (`ConstantOp` from
#    `infopt.mlir.toy`); any other transpose stays as it is;
# 2. the new constant holds the data of the transposed matrix, with the transposed shape as its type;
# 3. the constant the transpose read stays in place (other ops may use it; dead-code removal takes it if not);
# 4. when that constant has users other than this transpose, the fold makes a second copy of its data: then fold
#    only if it holds at most 16 elements, and leave the transpose otherwise.
#
# A constant's data is `op.value.get_values()` (row-major) and its shape `op.value.type.get_shape()`; build the
# new one with `ConstantOp(DenseIntOrFPElementsAttr.from_list(TensorType(f64, shape), values))` (names from
# `xdsl.dialects.builtin`), and a value's users are its `.uses` (each with `.operation`). Do not use, copy or
# subclass the library's patterns (`infopt.mlir.toy.patterns`).
#
# The tests apply your pattern alone (`apply_pattern_class(FoldConstantTranspose, module)` from
# `infopt.mlir.toy.patterns`) to Toy programs with constants of many shapes and users, and check what the
# programs print, which transposes are left, and which constants exist afterwards.

# %% solution=true grade_id="transpose_pattern"
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType, f64

from infopt.mlir.toy import ConstantOp


class FoldConstantTranspose(RewritePattern):
    """transpose(constant) -> the transposed constant (legal: see the rule)."""

    ### BEGIN SOLUTION
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        const = op.arg.owner
        if not isinstance(const, ConstantOp):
            return
        rows, cols = const.value.type.get_shape()
        values = [float(v) for v in const.value.get_values()]
        if any(use.operation is not op for use in const.res.uses) and len(values) > 16:
            return
        flipped = [values[r * cols + c] for c in range(cols) for r in range(rows)]
        rewriter.replace(op, ConstantOp(DenseIntOrFPElementsAttr.from_list(TensorType(f64, [cols, rows]), flipped)))
    ### END SOLUTION


# %% grade_id="transpose_pattern_test" points=3
from infopt.grading.forbid import forbid
from infopt.mlir.toy.programs import random_toy_source
from infopt.mlir.toy import patterns as _toy_patterns
from infopt.mlir.toy.patterns import apply_pattern_class

_FOLD_FORBIDDEN = tuple(f"infopt.mlir.toy.patterns:{name}" for name in (
    "FoldConstantTranspose", "SimplifyRedundantTranspose", "FoldConstantReshape", "ReshapeReshape",
    "RedundantReshape", "canonicalize"))


def _constants(module) -> list:
    """The module's toy.constants as (shape, values), sorted: what must exist after the fold."""
    return sorted((tuple(op.value.type.get_shape()), tuple(float(v) for v in op.value.get_values()))
                  for op in module.walk() if op.name == "toy.constant")


def _check_fold(source: str, label: str, hidden: bool) -> None:
    module = emit_toy(source)
    want_prints = run_toy(module)
    want = apply_patterns(module.clone(), [_toy_patterns.FoldConstantTranspose()])
    with case(label, show=lambda: source.strip(), hidden=hidden):
        with forbid(*_FOLD_FORBIDDEN, exercise="FoldConstantTranspose", why="write the pattern yourself",
                    namespaces=(globals(),)):
            got = call_student(apply_pattern_class, FoldConstantTranspose, module,
                               name="apply_pattern_class(FoldConstantTranspose, module)", fingerprint=lambda m: 0)
        try:
            got.verify()
        except Exception as err:  # noqa: BLE001 (the student's rewrite left ill-formed IR)
            check_true(False, f"after your pattern the program does not verify: {str(err)[:400]}")
        try:
            printed = run_toy(got)
        except Exception as err:  # noqa: BLE001 (the rewritten program no longer computes)
            check_true(False, f"after your pattern the program fails when run: {type(err).__name__}: {err}")
        check_true(len(printed) == len(want_prints) and all(a.shape == b.shape and np.array_equal(a, b)
                                                             for a, b in zip(printed, want_prints)),
                   f"after your pattern the program prints {[g.tolist() for g in printed]} instead of "
                   f"{[w.tolist() for w in want_prints]}")
        left = sum(op.name == "toy.transpose" for op in got.walk())
        keep = sum(op.name == "toy.transpose" for op in want.walk())
        check_true(left == keep, f"{left} transposes are left after your pattern; the rule leaves {keep} (it folds "
                   "every transpose of a constant, except those of a constant with other users that holds more "
                   "than 16 elements)")
        check_true(_constants(got) == _constants(want),
                   f"the constants after your pattern are {[c[0] for c in _constants(got)]} (shapes); the rule "
                   f"leaves {[c[0] for c in _constants(want)]}, each with its data"
                   + ("" if [c[0] for c in _constants(got)] != [c[0] for c in _constants(want)] else
                      " (same shapes, different values: is the data transposed, or only the shape?)"))


_check_fold("def main() { var a = [[1, 2, 3], [4, 5, 6]]; print(transpose(a)); }", "one 2x3 constant", False)
_check_fold("def main() { var a = [[1, 2, 3], [4, 5, 6]]; print(transpose(a)); print(a + a); }",
            "a small constant that is also used elsewhere", False)
_check_fold("def main() { var a = [[1, 2], [3, 4]]; var b = a + a; print(transpose(b)); }",
            "a transpose of a computed value stays", False)
print("FoldConstantTranspose: visible tests passed")
### BEGIN HIDDEN TESTS
_rng = grading_rng(4)


def _literal(rows: int, cols: int) -> str:
    """A literal of decimals no float32 holds exactly (and no int), from -1000 to 1000."""
    values = np.round(_rng.uniform(-1000, 1000, (rows, cols)), 3) + 0.001
    return "[" + ", ".join("[" + ", ".join(f"{v:.3f}" for v in row) + "]" for row in values) + "]"


# the size limit at its edge, for each kind of user: exactly 16 elements, one more row, a column vector
for _k, (_r, _c) in enumerate([(4, 4), (2, 8), (16, 1), (1, 16), (3, 6), (17, 1), (2, 9)]):
    if _rng.random() < 0.5:
        _r, _c = _c, _r
    _check_fold(f"def main() {{ var a = {_literal(_r, _c)}; print(transpose(a)); print(a * a); }}",
                f"hidden: a {_r}x{_c} constant with another user", True)
    _check_fold(f"def main() {{ var a = {_literal(_r, _c)}; print(transpose(a)); }}",
                f"hidden: a {_r}x{_c} constant used only by the transpose", True)
# the other user is only a print, or only a reshape: each counts, over the limit and under it
for _r, _c in ((3, 6), (2, 4)):
    _check_fold(f"def main() {{ var a = {_literal(_r, _c)}; print(a); print(transpose(a)); }}",
                f"hidden: a {_r}x{_c} constant also printed", True)
    _check_fold(f"def main() {{ var a = {_literal(_r, _c)}; var b<{_c}, {_r}> = a; print(transpose(a)); print(b); }}",
                f"hidden: a {_r}x{_c} constant also reshaped", True)
# two transposes of one constant (each is the other's other user), and chains through constants
_check_fold(f"def main() {{ var a = {_literal(2, 3)}; print(transpose(a)); print(transpose(a)); }}",
            "hidden: two transposes of one constant", True)
_check_fold(f"def main() {{ var a = {_literal(3, 6)}; print(transpose(a)); print(transpose(a)); }}",
            "hidden: two transposes of one 18-element constant", True)
_check_fold(f"def main() {{ var a = {_literal(3, 2)}; var t = transpose(transpose(a)); print(t); "
            f"print(transpose(t) * transpose(a)); }}", "hidden: chains that start at a constant", True)
_check_fold(f"def main() {{ var b<3, 2> = [1, 2, 3, 4, 5, 6]; print(transpose(b)); var c = {_literal(2, 2)}; "
            f"print(transpose(c + c)); }}", "hidden: a reshaped declaration and a computed value", True)
# rule 1 alone: transposes whose operand is no constant, a transpose among them (no other fold may take them)
_check_fold(f"def main() {{ var c = {_literal(2, 3)}; var d = c * c; print(transpose(transpose(d))); "
            f"print(transpose(d + d)); }}", "hidden: transposes of computed values and of a transpose", True)
for _trial in range(4):
    _check_fold(random_toy_source(_rng, statements=int(_rng.integers(4, 9))), f"hidden random program #{_trial}", True)
### END HIDDEN TESTS

# %% [markdown]
# With all four canonicalizations, then **shape inference** (chapter 4): each op with an unranked result whose
# operands are ranked is asked, through its `ShapeInference` interface method `infer_shapes`, for its type —
# transpose reverses the shape, add and mul leave it — until every value has a shape:

# %%
canonicalize(toy_module)
infer_shapes(toy_module)
print(print_ir(toy_module))

# %% [markdown]
# In MLIR each of these is a **pass**: a class with a `name`, registered so that a pipeline can ask for it by name
# (`mlir-opt --pass-pipeline=...`, or `--canonicalize`). xDSL is the same: a pass derives `ModulePass`, carries a
# `name`, and its `apply(ctx, op)` rewrites the module `op` in place; `infopt.mlir.toy.passes` registers the library's
# two Toy passes and runs a pipeline spec on a copy of a module:

# %%
from infopt.mlir.toy.passes import PASSES, run_pipeline

print("registered:", [p.name for p in PASSES])
staged = run_pipeline(emit_toy(TOY_SOURCE), "toy-canonicalize,toy-shape-inference")
print(print_ir(staged) == print_ir(toy_module))

# %% [markdown]
# ### Exercise 5 — shape inference as a pass of your own (3 points)
#
# Write `ShapeInferencePass`, an xDSL `ModulePass` (a dataclass, `@dataclass(frozen=True)`, like the library's) whose
# `name` is `"toy-shape-inference"` and whose `apply(self, ctx, op)` gives every unranked Toy result of the module
# `op` its shape, in place, with `set_result_shape(toy_op, shape)` from `infopt.mlir.toy.dialect` (`shape_of(type)`
# reads a type's shape, None for `tensor<*xf64>`). The rules:
#
# 1. `toy.transpose` of an m × n operand is n × m; `toy.add` and `toy.mul` have their operands' shape (constants and
#    reshapes are ranked already);
# 2. every function of the module is inferred, not only `main`;
# 3. only result types change: no op is added, removed or moved, and what the program prints stays the same;
# 4. when a result cannot be inferred the pass fails, raising xDSL's `PassFailedException`
#    (`xdsl.utils.exceptions`) with a message that names the op (`toy.add`, say): an add or a mul whose operand shapes
#    differ (Toy has no broadcasting), a transpose whose operand is not 2-D, or an op with an operand that stays
#    unranked (a function argument of type `tensor<*xf64>`); a value that no op computes from, such an argument only
#    printed, is no failure; after a failure the module may be left half inferred;
# 5. compute the shapes yourself: do not call the ops' `infer_shapes` methods, the library's `infer_shapes` or its
#    `ToyShapeInference` pass.
#
# The tests register your class under its `name` beside the library's `toy-canonicalize` and run pipelines such as
# `"toy-canonicalize,toy-shape-inference"` (`run_with_pass(ShapeInferencePass, module, spec)` from
# `infopt.mlir.toy.passes`) on random Toy programs and on functions written as IR, and compare every type with what
# the library's pass infers.

# %% solution=true grade_id="shape_pass"
from dataclasses import dataclass

from xdsl.dialects.builtin import UnrankedTensorType
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from infopt.mlir.toy import AddOp, MulOp, TransposeOp
from infopt.mlir.toy.dialect import set_result_shape, shape_of


@dataclass(frozen=True)
class ShapeInferencePass(ModulePass):
    """Chapter 4: every unranked Toy result given its shape."""

    name = "toy-shape-inference"

    def apply(self, ctx, op) -> None:
        ### BEGIN SOLUTION
        for inner in op.walk():     # in program order: an op's operands are inferred before it
            if not any(isinstance(r.type, UnrankedTensorType) for r in inner.results):
                continue
            shapes = [shape_of(v.type) for v in inner.operands]
            if any(s is None for s in shapes):
                raise PassFailedException(f"{inner.name}: its operands are unranked, so its shape cannot be inferred")
            if isinstance(inner, TransposeOp):
                if len(shapes[0]) != 2:
                    raise PassFailedException(f"{inner.name}: its operand has shape {shapes[0]}, not a 2-D one")
                set_result_shape(inner, tuple(reversed(shapes[0])))
            elif isinstance(inner, (AddOp, MulOp)):
                if shapes[0] != shapes[1]:
                    raise PassFailedException(f"{inner.name}: operand shapes {shapes[0]} and {shapes[1]} differ")
                set_result_shape(inner, shapes[0])
            else:
                raise PassFailedException(f"{inner.name}: no shape rule for this op")
        ### END SOLUTION


# %% grade_id="shape_pass_test" points=3
from xdsl.dialects.builtin import UnrankedTensorType

from infopt.grading.forbid import forbid
from infopt.mlir.toy.dialect import TOY
from infopt.mlir.toy.passes import run_pipeline, run_with_pass
from infopt.mlir.toy.programs import random_toy_source, toy_literal

_SHAPE_FORBIDDEN = ("infopt.mlir.toy.shapes:infer_shapes", "infopt.mlir.toy.passes:ToyShapeInference.apply",
                    "infopt.mlir.toy.dialect:_Binary.infer_shapes", "infopt.mlir.toy.dialect:TransposeOp.infer_shapes")


def _run_pass(module, spec: str) -> dict:
    with forbid(*_SHAPE_FORBIDDEN, exercise="the shape-inference pass", why="compute the shapes yourself",
                namespaces=(globals(),)):
        return call_student(run_with_pass, ShapeInferencePass, module, spec, fingerprint=lambda a: 0,
                            name=f"the pipeline {spec!r} with your ShapeInferencePass")


def _typed(module) -> list:
    return [(op.name, [str(r.type) for r in op.results]) for op in module.walk()]


def _first_wrong_type(got, want) -> str:
    """Where the module as the student's pass left it first gives a ranked result another shape than the library."""
    for (name, types), (_, wants) in zip(_typed(got), _typed(want)):
        if types != wants and not any("*" in t for t in types):
            return f"a {name} has the type {types} after your pass; its shape is {wants}"
    return ""


def _pipeline_error(spec: str, report: dict, want) -> str:
    error = report["error"]
    if "Unrecognized passes" in error["message"]:
        return (f"the pipeline {spec!r} found no pass named 'toy-shape-inference': the pipeline looks your pass up "
                f"by its `name` ({error['message']})")
    wrong = _first_wrong_type(report["module"], want) if report["module"] is not None else ""
    return (f"the pipeline {spec!r} with your pass failed on a module whose every shape can be inferred: "
            f"{error['type']}: {error['message']}" + (f"; before it failed, {wrong}" if wrong else ""))


def _check_infers(module, spec: str, label: str, hidden: bool) -> None:
    with case(label, show=lambda: print_ir(module), hidden=hidden):
        want = run_pipeline(module, spec)
        report = _run_pass(module, spec)
        check_true(report["error"] is None,
                   _pipeline_error(spec, report, want) if report["error"] else f"the pipeline {spec!r} runs")
        got = report["module"]
        check_true([op.name for op in got.walk()] == [op.name for op in want.walk()],
                   f"after the pipeline {spec!r} the module's ops are {[op.name for op in got.walk()]}, not "
                   f"{[op.name for op in want.walk()]}: a shape-inference pass changes result types only")
        check_true(not report["changed_ops"], f"your pass {', '.join(report['changed_ops'][:3])}: a shape-inference "
                   "pass changes result types only, setting them on the module's own ops (set_result_shape), and "
                   "adds, removes or moves none")
        left = [op.name for op in got.walk() if any(isinstance(r.type, UnrankedTensorType) for r in op.results)]
        check_true(not left, f"{len(left)} results are still unranked after your pass ({left[:1]} first)")
        wrong = _first_wrong_type(got, want)
        check_true(not wrong, wrong or "every result has the shape the library infers")
        check_true(report["verify_error"] is None, f"after your pass the module does not verify: "
                   f"{report['verify_error'] and report['verify_error']['message']}")
        if any(op.name == "func.func" and op.sym_name.data == "main" for op in module.walk()):
            check_true(all(np.array_equal(a, b) for a, b in zip(run_toy(got), run_toy(want))),
                       "after your pass the program prints something else")


def _check_fails(module, culprit: str, label: str, hidden: bool) -> None:
    with case(label, show=lambda: print_ir(module), hidden=hidden):
        report = _run_pass(module, "toy-shape-inference")
        error = report["error"]
        check_true(error is not None, f"your pass accepted a module whose {culprit} cannot be inferred: it must fail "
                   "with PassFailedException" + (f" (what it left does not verify either: "
                                                 f"{report['verify_error']['message'][:300]})"
                                                 if report["verify_error"] else ""))
        check_true("PassFailedException" in [error["type"], *error["bases"]],
                   f"your pass failed with {error['type']} ({error['message'][:200]}); a pass that cannot infer a "
                   "result raises PassFailedException")
        check_true(culprit in error["message"], f"your pass raised PassFailedException, but its message "
                   f"{error['message'][:300]!r} does not name the op, {culprit}")


_ADD_OF_ARGUMENTS = """func.func @helper(%a: tensor<{s}xf64>, %b: tensor<{s}xf64>) {{
  %s = "toy.add"(%a, %b) : (tensor<{s}xf64>, tensor<{s}xf64>) -> tensor<*xf64>
  %t = "toy.transpose"(%s) : (tensor<*xf64>) -> tensor<*xf64>
  %p = "toy.mul"(%t, %t) : (tensor<*xf64>, tensor<*xf64>) -> tensor<*xf64>
  "toy.print"(%p) : (tensor<*xf64>) -> ()
  func.return
}}
"""
_UNRANKED_ARGUMENT = """func.func @f(%a: tensor<*xf64>, %b: tensor<2x3xf64>) {{
  %t = "toy.{op}"({operands}) : ({types}) -> tensor<*xf64>
  "toy.print"(%t) : (tensor<*xf64>) -> ()
  func.return
}}
"""

_check_infers(emit_toy(TOY_SOURCE), "toy-canonicalize,toy-shape-inference", "the program above", False)
_check_infers(emit_toy(TOY_SOURCE), "toy-shape-inference", "the program above, not canonicalized", False)
_check_infers(parse_module(_ADD_OF_ARGUMENTS.format(s="2x3"), [TOY]), "toy-shape-inference", "a helper function",
              False)
_check_fails(emit_toy("def main() { var a = [[1, 2, 3]]; print(a + transpose(a)); }"), "toy.add",
             "adding a 1x3 and a 3x1 value", False)
print("ShapeInferencePass: visible tests passed")
### BEGIN HIDDEN TESTS
_rng = grading_rng(7)
_r, _c = (int(v) for v in _rng.integers(2, 6, 2))
_c += _r == _c          # never square: a transpose that keeps its shape shows
_shape = f"{_r}x{_c}"
_check_infers(parse_module(_ADD_OF_ARGUMENTS.format(s=_shape) + "\n" + _ADD_OF_ARGUMENTS.format(
    s=f"{_c}x{_r + 1}").replace("@helper", "@other"), [TOY]), "toy-shape-inference",
    "hidden: two functions of arguments, no main", True)
_with_main = parse_module(_ADD_OF_ARGUMENTS.format(s=f"{_c}x{_r}"), [TOY])   # main beside another function
_with_main.body.block.add_op(next(op for op in emit_toy(random_toy_source(_rng, statements=5)).walk()
                                  if op.name == "func.func").clone())
_check_infers(_with_main, "toy-shape-inference", "hidden: main and a helper function", True)
for _spec in ("toy-shape-inference", "toy-canonicalize,toy-shape-inference", "toy-shape-inference,toy-canonicalize"):
    for _trial in range(2):
        _check_infers(emit_toy(random_toy_source(_rng, statements=int(_rng.integers(4, 9)))), _spec,
                      f"hidden random program, pipeline {_spec!r}", True)
_check_infers(emit_toy(f"def main() {{ var a = [[1, 2]]; var b = transpose(transpose(transpose(a))); "
                       f"print(b * b); print(transpose(b) + a); }}"), "toy-shape-inference",
              "hidden: a chain of transposes", True)
for _op in ("add", "mul"):   # each failure alone: mismatched shapes, and an unranked operand
    _check_fails(emit_toy(f"def main() {{ var a = [[1, 2, 3], [4, 5, 6]]; var t = transpose(a); "
                          f"print(t {'+' if _op == 'add' else '*'} a); }}"), f"toy.{_op}",
                 f"hidden: a {_op} of 3x2 and 2x3", True)
    _check_fails(parse_module(_UNRANKED_ARGUMENT.format(op=_op, operands="%a, %b", types="tensor<*xf64>, tensor<2x3xf64>"),
                              [TOY]), f"toy.{_op}", f"hidden: a {_op} of an unranked argument", True)
_check_fails(parse_module(_UNRANKED_ARGUMENT.format(op="transpose", operands="%a", types="tensor<*xf64>"), [TOY]),
             "toy.transpose", "hidden: a transpose of an unranked argument", True)
_check_fails(parse_module('func.func @f(%a: tensor<2x3x4xf64>) {\n  %s = "toy.add"(%a, %a) : (tensor<2x3x4xf64>, '
                          'tensor<2x3x4xf64>) -> tensor<*xf64>\n  %t = "toy.transpose"(%s) : (tensor<*xf64>) -> '
                          'tensor<*xf64>\n  "toy.print"(%t) : (tensor<*xf64>) -> ()\n  func.return\n}\n', [TOY]),
             "toy.transpose", "hidden: a transpose of a 3-D value", True)
# each operand alone: an unranked second operand, shapes that differ in their rows only or their columns only, reached
# through another op; a transpose of a 1-D value; and an unranked argument only printed, which is no failure
for _op in ("add", "mul"):
    _check_fails(parse_module(_UNRANKED_ARGUMENT.format(op=_op, operands="%b, %a", types="tensor<2x3xf64>, tensor<*xf64>"),
                              [TOY]), f"toy.{_op}", f"hidden: a {_op} whose second operand is unranked", True)
_n = int(_rng.integers(3, 6))
_wide = toy_literal([range(1, _n + 2)] * 2)   # 2 x (n+1)
_tall = toy_literal([range(1, _n + 1)] * 3)   # 3 x n
_base = toy_literal([range(2, _n + 2)] * 2)   # 2 x n
_check_fails(emit_toy(f"def main() {{ var a = {_base}; var w = {_wide}; var c = a * a; print(c + w); }}"), "toy.add",
             "hidden: an add of shapes with the same rows, through a mul", True)
_check_fails(emit_toy(f"def main() {{ var a = {_base}; var t = {_tall}; var c = a + a; print(t * c); }}"), "toy.mul",
             "hidden: a mul of shapes with the same columns, through an add", True)
_check_fails(emit_toy(f"def main() {{ var a = {toy_literal(range(_n))}; var b = a + a; "
                      f"print(transpose(b)); }}"), "toy.transpose", "hidden: a transpose of a 1-D value", True)
_check_infers(parse_module(_UNRANKED_ARGUMENT.format(op="add", operands="%b, %b", types="tensor<2x3xf64>, tensor<2x3xf64>")
                           .replace('  func.return', '  "toy.print"(%a) : (tensor<*xf64>) -> ()\n  func.return'), [TOY]),
              "toy-shape-inference", "hidden: an unranked argument that is only printed", True)
_check_fails(parse_module(_ADD_OF_ARGUMENTS.format(s=_shape) + "\n" + _UNRANKED_ARGUMENT.format(
    op="transpose", operands="%a", types="tensor<*xf64>"), [TOY]), "toy.transpose",
    "hidden: an unranked argument in the second function", True)
### END HIDDEN TESTS

# %% [markdown]
# **Partial lowering** (chapter 5): every computing op becomes a `memref.alloc` and an affine loop nest; constants
# are stored element by element; `toy.print` stays and now prints a memref. Then (chapter 6) print becomes a
# call to MLIR's runtime `printMemrefF64`, mlir-opt-19 lowers affine → scf → cf → llvm, and
# **`mlir-cpu-runner-19`** runs `main` — the one place the course uses the CPU runner, since all a Toy program does is
# print:

# %%
toy_affine = lower_to_affine(toy_module)
print(print_ir(toy_affine)[:1500], "...")
printed, toy_llvm = run_toy_native(lower_print(toy_affine))
for got, want in zip(printed, toy_expected):
    print(got.tolist(), "  (numpy:", want.tolist(), ")")

# %% [markdown]
# ## 11. A custom dialect: `npu`, for unit 07's systolic array
#
# Unit 07's accelerator takes a command stream: DMA loads from DRAM into three SRAM buffers (`in`, `wt`, `out`),
# tile matmuls on the array, DMA stores back. A compiler for it needs a dialect whose ops *are* those commands, so
# that a lowering pass can produce them and the rest of MLIR (printing, verifying, canonicalizing, CSE) works on
# them. `infopt.mlir.npu` defines three ops with xDSL's IRDL — a Python class per op, with operand, result and
# property definitions, an assembly format, and a `verify_` method. Here is `npu.dma_load`:

# %%
import inspect

from infopt.mlir.npu import dialect as npu_dialect

print(inspect.getsource(npu_dialect.DmaLoadOp))

# %% [markdown]
# ### Exercise 6 — the `npu.matmul` op, with its verifier (3 points)
#
# Define `NpuMatmul`, the xDSL operation `npu.matmul` (one m × n × k tile on the array), with IRDL:
#
# | field | kind | definition |
# |---|---|---|
# | `a_addr`, `b_addr`, `c_addr` | operands: byte addresses in `in`, `wt`, `out` | `operand_def(IndexType)` |
# | `m`, `n`, `k` | operands: the tile's sizes (smaller at the edges, so computed in the loops) | `operand_def(IndexType)` |
# | `acc` | operand: add to what `out` holds | `operand_def(i1)` |
# | `tile` | property: the bounds `[TM, TN, TK]` | `prop_def(DenseArrayBase)` |
# | `dataflow` | property | `prop_def(StringAttr)` |
# | `dtype` | property: the operand type | `prop_def(TypeAttribute)` |
#
# and a constructor `NpuMatmul(a_addr, b_addr, c_addr, m, n, k, acc, tile, dataflow, dtype)` (the first seven are
# SSA values, `tile` a tuple of three ints, `dataflow` a str, `dtype` an xDSL type such as `i8`), built like
# `DmaLoadOp`'s above (`DenseArrayBase.from_list(IntegerType(64), list(tile))`). Its `verify_` must raise
# `VerifyException` in four cases, with a message that says what is wrong: it names the field at fault, as a word,
# and none of the other fields of this list:
#
# 1. `tile` is not three positive sizes (the message names "tile");
# 2. `dataflow` is neither "ws" nor "os" (names "dataflow");
# 3. `dtype` is neither `i8` (the signless 8-bit integer) nor `f32` (names "dtype");
# 4. `m`, `n` or `k` is a constant outside 1 .. its tile bound (`TM` for `m`, `TN` for `n`, `TK` for `k`); the
#    message names the operand ("m", "n" or "k"; it may say "tile" for the bound). `constant_index(v)` from
#    `infopt.mlir.npu.dialect` gives an operand's value when an `arith.constant` defines it, else None.
#
# A size computed in a loop is not a constant: such ops are well formed. Do not subclass or call the library's
# `npu.MatmulOp`. The tests build well-formed ops (they have to verify), then break one thing at a time, and parse
# the generic form of your op with a dialect holding it.

# %% solution=true grade_id="npu_op"
from xdsl.dialects.builtin import (DenseArrayBase, Float32Type, IndexType, IntegerType, StringAttr, TypeAttribute,
                                   i1, i8)
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, prop_def
from xdsl.utils.exceptions import VerifyException

from infopt.mlir.npu.dialect import constant_index

### BEGIN SOLUTION
@irdl_op_definition
class NpuMatmul(IRDLOperation):
    """One m x n x k tile on the systolic array: in[a] x wt[b] -> out[c] (accumulating when acc)."""

    name = "npu.matmul"
    a_addr = operand_def(IndexType)
    b_addr = operand_def(IndexType)
    c_addr = operand_def(IndexType)
    m = operand_def(IndexType)
    n = operand_def(IndexType)
    k = operand_def(IndexType)
    acc = operand_def(i1)
    tile = prop_def(DenseArrayBase)
    dataflow = prop_def(StringAttr)
    dtype = prop_def(TypeAttribute)

    def __init__(self, a_addr, b_addr, c_addr, m, n, k, acc, tile, dataflow, dtype):
        super().__init__(operands=[a_addr, b_addr, c_addr, m, n, k, acc],
                         properties={"tile": DenseArrayBase.from_list(IntegerType(64), list(tile)),
                                     "dataflow": StringAttr(dataflow), "dtype": dtype})

    def verify_(self) -> None:
        tile = list(self.tile.get_values())
        if len(tile) != 3 or min(tile) < 1:
            raise VerifyException(f"npu.matmul: tile must be three positive sizes [TM, TN, TK], got {tile}")
        if self.dataflow.data not in ("ws", "os"):
            raise VerifyException(f"npu.matmul: dataflow must be 'ws' or 'os', got {self.dataflow.data!r}")
        if not (self.dtype == i8 or isinstance(self.dtype, Float32Type)):
            raise VerifyException(f"npu.matmul: dtype must be i8 or f32, got {self.dtype}")
        for name, value, bound in (("m", self.m, tile[0]), ("n", self.n, tile[1]), ("k", self.k, tile[2])):
            c = constant_index(value)
            if c is not None and not 1 <= c <= bound:
                raise VerifyException(f"npu.matmul: {name} = {c} is outside 1..{bound}")
### END SOLUTION


# %% grade_id="npu_op_test" points=3
import re

from xdsl.dialects.builtin import DenseArrayBase, IntegerType
from xdsl.irdl import IRDLOperation

from infopt.grading.forbid import forbid
from infopt.mlir.npu import MatmulOp as _LibraryMatmul
from infopt.mlir.npu.probes import build_matmul_op, parse_with_op

_IRDL_BASE = f"{IRDLOperation.__module__}:{IRDLOperation.__qualname__}"
_LIBRARY_OP = f"{_LibraryMatmul.__module__}:{_LibraryMatmul.__qualname__}"
_OPERAND_NAMES = ("a_addr", "b_addr", "c_addr", "m", "n", "k", "acc")


def _probe(what: str, **kw) -> dict:
    """Your NpuMatmul built on seven distinct SSA values and verified (infopt.mlir.npu.probes.build_matmul_op: a size
    None is computed, as a loop's min(...) is; dtype is a type's text): the report, its class and operands checked."""
    with forbid("infopt.mlir.npu.dialect:MatmulOp", exercise="the npu.matmul op",
                why="write the definition yourself", namespaces=(globals(),)):
        report = call_student(build_matmul_op, NpuMatmul, name="NpuMatmul", fingerprint=lambda a: 0, **kw)
    bases = report.get("bases") or []
    check_true(_IRDL_BASE in bases, "NpuMatmul must be an IRDLOperation class decorated with @irdl_op_definition"
               + (f" ({report['build_error']})" if not bases and report.get("build_error") else ""))
    check_true(_LIBRARY_OP not in bases,
               "NpuMatmul subclasses the library's npu.MatmulOp: write the definition yourself")
    if kw.get("wrong_operand") is not None:
        return report
    check_true(report.get("build_error") is None, f"NpuMatmul(a, b, c, m, n, k, acc, {what}) raised "
               f"{report.get('build_error')}")
    wrong = [name for name in _OPERAND_NAMES if report["accessors"].get(name) != _OPERAND_NAMES.index(name)]
    check_true(not wrong and report["operands"] == list(range(7)),
               f"the constructor's first seven arguments are the operands a_addr, b_addr, c_addr, m, n, k, acc, in "
               f"that order; NpuMatmul(a, b, c, m, n, k, acc, ...) has {len(report['operands'])} operands"
               + (f", and op.{wrong[0]} is not the value passed as {wrong[0]}" if wrong else ""))
    return report


def _check_ok(label: str, hidden: bool, **kw) -> None:
    with case(label, show=lambda: str(kw), hidden=hidden):
        report = _probe(str(kw), **kw)
        check_equal(report["name"], "npu.matmul", name="the op's name")
        tile = kw.get("tile", (8, 4, 4))
        want = str(DenseArrayBase.from_list(IntegerType(64), list(tile)))
        check_true(report["tile"] == want, f"the tile property is {report['tile']}; NpuMatmul(..., tile={tile}, ...) "
                   f"should hold {want}")
        error = report["verify"]
        check_true(error is None, f"a well-formed npu.matmul ({kw}) was rejected: "
                   f"{error and (error['message'] if error['verify_exception'] else error['type'] + ': ' + error['message'])}")


def _check_bad(label: str, word: str, hidden: bool, **kw) -> None:
    with case(label, show=lambda: str(kw), hidden=hidden):
        error = _probe(str(kw), **kw)["verify"]
        check_true(error is not None and error["verify_exception"],
                   f"your verifier did not raise VerifyException for an ill-formed npu.matmul ({kw})"
                   + (f": it raised {error['type']}: {error['message']}" if error else ""))
        message = error["message"]
        check_true(_names(message, word), f"the verifier rejected the op, but its message {message!r} does not "
                                          f"name {word!r} (as a word): say what is wrong")
        others = [f for f in _FIELDS if f != word and not (f == "tile" and word in "mnk") and _names(message, f)]
        check_true(not others, f"the verifier rejected the op for its {word}, but its message {message!r} also "
                               f"names {others}: say what is wrong, not everything that could be")


_FIELDS = ("tile", "dataflow", "dtype", "m", "n", "k")


def _names(message: str, field: str) -> bool:
    """Whether `message` names `field` as a word ("m" in "m = 9", not in "npu.matmul")."""
    return re.search(rf"(?<![A-Za-z0-9_]){field}(?![A-Za-z0-9_])", message) is not None


def _check_operand_types(hidden: bool) -> None:
    """One operand of the wrong type at a time (the table's operand_def types): verify must reject the op."""
    for pos, name in enumerate(_OPERAND_NAMES):
        label, want = f"an i32 {name} operand", "i1" if name == "acc" else "index"
        with case(f"{'hidden: ' if hidden else ''}{label}", show=label, hidden=hidden):
            report = _probe(label, sizes=(4, 4, 4), tile=(8, 4, 4), dataflow="ws", dtype="i8", wrong_operand=pos)
            if report.get("build_error") is not None:   # refusing the wrong type when building is as good
                continue
            check_true(report["verify"] is not None,
                       f"an npu.matmul built with {label} verified: the table declares that operand "
                       f"operand_def({'i1' if want == 'i1' else 'IndexType'}), so xDSL's verifier must reject an "
                       f"i32 value there")


def _check_generic_form(hidden: bool) -> None:
    with case("parsing the generic form", hidden=hidden):
        text = ('func.func @f(%i: index, %t: i1) {\n  "npu.matmul"(%i, %i, %i, %i, %i, %i, %t) <{tile = '
                'array<i64: 8, 4, 4>, dataflow = "os", dtype = f32}> : (index, index, index, index, index, index, '
                'i1) -> ()\n  return\n}\n')
        with forbid("infopt.mlir.npu.dialect:MatmulOp", exercise="the npu.matmul op",
                    why="write the definition yourself", namespaces=(globals(),)):
            parsed = call_student(parse_with_op, NpuMatmul, text, name="NpuMatmul", fingerprint=lambda a: 0)
        check_true(parsed["error"] is None, "the generic form of npu.matmul did not parse and verify with your op: "
                   f"{parsed['error'] and parsed['error']['message']}")
        check_true(parsed["found"] == 1, "the parsed op is not your NpuMatmul")


_check_ok("a well-formed op", False)
_check_ok("a well-formed output-stationary float op", False, dataflow="os", dtype="f32")
_check_bad("a two-entry tile", "tile", False, tile=(8, 4))
_check_bad("an unknown dataflow", "dataflow", False, dataflow="row-stationary")
_check_bad("an int32 dtype", "dtype", False, dtype="i32")
_check_bad("m above its bound", "m", False, sizes=(9, 4, 4))
_check_ok("computed sizes, as the loops make them", False, sizes=(None, None, None))
_check_generic_form(False)
print("NpuMatmul: visible tests passed")
### BEGIN HIDDEN TESTS
_check_operand_types(True)
_rng = grading_rng(5)
_T = tuple(int(v) for v in np.cumsum(_rng.integers(1, 4, 3)) + 1)   # TM < TN < TK: an (M, K, N) mix-up shows
_check_ok("hidden: computed sizes", True, sizes=(None, None, None), tile=(9, 9, 9))
_check_ok("hidden: sizes at their bounds", True, sizes=_T, tile=_T, dataflow=str(_rng.choice(["ws", "os"])))
_check_ok("hidden: sizes of one", True, sizes=(1, 1, 1), tile=_T, dtype="f32")
_check_ok("hidden: a tile bound of one", True, sizes=(1, 1, 1), tile=(_T[0], 1, _T[2]), dtype="i8")
# each tile bound alone zero and negative, the sizes computed (so no size check can stand in for the tile's)
for _which in range(3):
    for _bad in (0, -int(_rng.integers(1, 4))):
        _tile = list(_T)
        _tile[_which] = _bad
        _check_bad(f"hidden: a {'zero' if _bad == 0 else 'negative'} tile bound", "tile", True, tile=tuple(_tile),
                   sizes=(None, None, None))
_check_bad("hidden: a zero tile bound, constant sizes", "tile", True, tile=(_T[0], 0, _T[2]), sizes=(1, 1, 1))
_check_bad("hidden: a four-entry tile", "tile", True, tile=(*_T, 2), sizes=(1, 1, 1))
_check_bad("hidden: a two-entry tile", "tile", True, tile=_T[:2], sizes=(None, None, None))
for _dataflow in ("WS", "is", "", "w", "s", " ws", "os ", "wsos", "w s"):   # no field is named in a value
    _check_bad(f"hidden: dataflow {_dataflow!r}", "dataflow", True, dataflow=_dataflow, tile=_T, sizes=(1, 1, 1))
for _dtype in ("f64", "index", "i32", "f16", "bf16", "i4", "i1", "si8", "ui8"):
    _check_bad(f"hidden: a {_dtype} dtype", "dtype", True, dtype=_dtype, tile=_T, sizes=(1, 1, 1))
_check_ok("hidden: f32 and signless i8 are both well formed", True, sizes=(1, 1, 1), tile=_T,
          dtype=str(_rng.choice(["f32", "i8"])))
# each size alone above its bound and at 0, with the other two constant and with them computed
for _which, _name in enumerate("mnk"):
    for _others in (1, None):
        _over = [_others] * 3
        # one past its own bound, which is within the next bound up: a check against another entry passes it
        _over[_which] = _T[_which] + (1 if _others else int(_rng.integers(1, 4)))
        _check_bad(f"hidden: {_name} above its bound, the others {'constant' if _others else 'computed'}", _name,
                   True, sizes=tuple(_over), tile=_T)
        _zero = [_others] * 3
        _zero[_which] = 0
        _check_bad(f"hidden: {_name} = 0, the others {'constant' if _others else 'computed'}", _name, True,
                   sizes=tuple(_zero), tile=_T)
_check_generic_form(True)
### END HIDDEN TESTS

# %% [markdown]
# **ODS.** In C++ MLIR the same op is written in **ODS** (Operation Definition Specification), a TableGen file
# (`infopt/mlir/ods/npu.td`); `mlir-tblgen-19` generates the C++ class. The two definitions line up field by field:

# %%
import re

from infopt.mlir.ods import generated_api, tblgen, td_text

_td = td_text()
print(_td[_td.index("def Npu_MatmulOp"):])
api = generated_api(tblgen("decls"), "MatmulOp")
print(f"mlir-tblgen generated {len(api['builders'])} builders, e.g.\n  {api['builders'][2]}")
print("accessors:", ", ".join(a for a in api["accessors"] if not a.endswith("Mutable")))
print("verifier hooks:", ", ".join(re.search(r"(\w+)\(", v).group(1) for v in api["verifier"]))

# %% [markdown]
# | what | xDSL (Python, IRDL) | ODS (TableGen → C++) |
# |---|---|---|
# | operands / properties | `operand_def(IndexType)`, `prop_def(DenseArrayBase)` | `(ins Index:$m, DenseI64ArrayAttr:$tile)` |
# | builders | `__init__` written by hand | `build(...)` overloads generated (typed and from raw attributes) |
# | accessors | attributes of the Python object (`op.m`) | `getM()`, `getTile()`, `getMMutable()` generated |
# | syntax | `assembly_format = "..."` | `let assemblyFormat = [{...}];` → `parse` / `print` generated |
# | verifier | `verify_(self)` in Python | `let hasVerifier = 1;` declares `verify()`, which you write in C++; `verifyInvariants()` (types, attribute kinds) is generated |
#
# ### Exercise 7 — an op in ODS (2 points)
#
# Write `ods_record(spec)`: the ODS `def` of the op an `OpSpec` (`infopt.mlir.ods`) describes, as TableGen text.
# It is compiled after `PREAMBLE` (in `infopt.mlir.ods`: it includes `OpBase.td` and `SideEffectInterfaces.td` and
# defines `Npu_Dialect` and the class `Npu_Op<mnemonic, traits>`, as `npu.td` above does). The rules:
#
# 1. the record is `def <spec.record> : Npu_Op<"<spec.mnemonic>", ...>`, with the trait `Pure` when `spec.pure`;
# 2. its `summary` is `spec.summary`, exactly;
# 3. its `arguments` are the operands, then the attributes, each in the spec's order, each written
#    `Constraint:$name` with the constraint `VALUE_KINDS[kind]` or `ATTRIBUTE_KINDS[kind]` names; its `results`
#    are the spec's results, written the same way;
# 4. `hasVerifier` is set exactly when `spec.verifier`;
# 5. it is one `def` and includes nothing; do not call the library's `reference_record`.
#
# The tests run mlir-tblgen-19 on your record (`record_outputs(text)`, which gives the generated C++ declarations and
# the op's documentation; `documented(docs)` reads the constraint of every operand, attribute and result off the
# documentation; and the records your text adds, with their fields as TableGen resolved them) for random specs, and
# compare what it generates (the record's name and summary, the op's name, its documented constraints, its builders,
# accessors, traits and verifier hooks) with what the spec asks for.

# %% solution=true grade_id="ods_record"
from infopt.mlir.ods import ATTRIBUTE_KINDS, VALUE_KINDS, OpSpec


def ods_record(spec: OpSpec) -> str:
    """The ODS `def` of the op `spec` describes."""
    ### BEGIN SOLUTION
    arguments = [f"{VALUE_KINDS[kind]}:${name}" for name, kind in spec.operands]
    arguments += [f"{ATTRIBUTE_KINDS[kind]}:${name}" for name, kind in spec.attributes]
    traits = ", [Pure]" if spec.pure else ""
    body = [f'  let summary = "{spec.summary}";', f"  let arguments = (ins {', '.join(arguments)});"]
    if spec.results:
        body.append(f"  let results = (outs {', '.join(f'{VALUE_KINDS[k]}:${n}' for n, k in spec.results)});")
    if spec.verifier:
        body.append("  let hasVerifier = 1;")
    return f'def {spec.record} : Npu_Op<"{spec.mnemonic}"{traits}> {{\n' + "\n".join(body) + "\n}\n"
    ### END SOLUTION


# %% grade_id="ods_record_test" points=2
from infopt.grading.forbid import forbid
from infopt.mlir.ods import (ATTRIBUTE_KINDS, VALUE_KINDS, OpSpec, class_declaration, documented, generated_api,
                             random_op_spec, record_outputs, reference_record)
from infopt.mlir.tools import MlirToolError


def _generated(text: str, what: str) -> dict:
    try:
        return record_outputs(text)
    except (MlirToolError, ValueError) as err:
        check_true(False, f"mlir-tblgen-19 rejected {what}: {str(err)[-900:]}")


def _check_record(spec: OpSpec, label: str, hidden: bool) -> None:
    with case(label, show=lambda: repr(spec), hidden=hidden):
        with forbid("infopt.mlir.ods:reference_record", exercise="the ODS record", why="write the record yourself",
                    namespaces=(globals(),)):
            text = call_student(ods_record, spec, name="ods_record")
        check_true(isinstance(text, str), f"ods_record returns the record as TableGen text (a str), got "
                                          f"{type(text).__name__}")
        got, want = _generated(text, "your record"), record_outputs(reference_record(spec))
        added = got["records"]
        check_true(added["defs"] == [spec.record] and not added["classes"],
                   f"your text defines {added['defs']}" + (f" and the classes {added['classes']}" if added["classes"]
                                                          else "") + f": the record is one def, named {spec.record}")
        summary = added["fields"][spec.record].get("summary")
        check_true(summary == spec.summary, f"your op does not give its summary: its `summary` is {summary!r}, the "
                   f"spec's is {spec.summary!r}")
        cls = spec.record.split("_", 1)[1]
        try:
            mine = class_declaration(got["decls"], cls)
        except ValueError:
            check_true(False, f"your record generates no C++ class {cls}: ODS names the class after the record "
                       f"({spec.record}), without the dialect's prefix")
        theirs = class_declaration(want["decls"], cls)
        name = f'"npu.{spec.mnemonic}"'
        check_true(name in mine, f"the op your record generates is not named {name} (the mnemonic, after the dialect)")
        doc, wanted = documented(got["docs"]), documented(want["docs"])
        for part, kinds in (("operands", "VALUE_KINDS"), ("attributes", "ATTRIBUTE_KINDS"), ("results", "VALUE_KINDS")):
            check_true(doc[part] == wanted[part], f"the {part} your record declares are documented as {doc[part]}; "
                       f"the spec's, each with the constraint {kinds} names, are {wanted[part]}")
        mine_f, want_f = added["fields"][spec.record], want["records"]["fields"][spec.record]
        for part in ("arguments", "results"):
            items = [sorted(str(f.get(part, "")).strip("()").removeprefix("ins").removeprefix("outs").strip()
                            .split(", ")) for f in (mine_f, want_f)]
            check_true(mine_f.get(part) == want_f.get(part) or items[0] != items[1], f"the {part} your record "
                       f"declares come in another order: {mine_f.get(part)}; the spec's order (the operands, then "
                       f"the attributes, each as the spec lists them) is {want_f.get(part)}")
            check_true(mine_f.get(part) == want_f.get(part), f"the {part} your record declares are "
                       f"{mine_f.get(part)}; the spec's, each written `Constraint:$name` with the constraint "
                       f"VALUE_KINDS or ATTRIBUTE_KINDS names, are {want_f.get(part)}")
        a, b = generated_api(got["decls"], cls), generated_api(want["decls"], cls)
        check_true(a["accessors"] == b["accessors"], f"your record generates the accessors {a['accessors']}; the "
                   f"spec's operands, attributes and results give {b['accessors']}")
        check_true(a["builders"] == b["builders"], "the builders your record generates take other arguments than the "
                   f"spec's, in its order: yours {a['builders'][:2]}, wanted {b['builders'][:2]}")
        check_true(mine.split("{")[0] == theirs.split("{")[0],
                   f"the traits of your op differ from what the spec asks for (pure={spec.pure}, {len(spec.results)} "
                   f"results, {len(spec.operands)} operands): yours are {mine.split('{')[0][len('class '):][:600]}")
        check_true(a["verifier"] == b["verifier"], f"your op's verifier hooks are {a['verifier']}; with "
                   f"verifier={spec.verifier} they are {b['verifier']}")
        check_true(mine == theirs, "the C++ your record generates differs from what the spec asks for (the operand, "
                   "attribute and result constraints: VALUE_KINDS and ATTRIBUTE_KINDS)")


_check_record(OpSpec("Npu_FillOp", "fill", "fill a region of the out SRAM with zeros",
                     (("addr", "index"), ("rows", "index"), ("cols", "index")), (("value", "i64"),), (), True, False),
              "a fill op with a verifier", False)
_check_record(OpSpec("Npu_TileCountOp", "tile_count", "count the tiles of a matmul", (("m", "index"),),
                     (("tile", "i64_array"),), (("count", "index"),), False, True), "a pure op with a result", False)
print("ods_record: visible tests passed")
### BEGIN HIDDEN TESTS
_rng = grading_rng(8)
# every combination of the flags in every grading: results or none, a verifier or none, pure or not
for _k, (_results, _verifier, _pure) in enumerate([(0, True, False), (1, False, True), (2, True, True),
                                                   (0, False, False), (0, True, True), (0, False, True),
                                                   (1, True, False), (2, False, False), (None, None, None)]):
    _check_record(random_op_spec(_rng, results=_results, verifier=_verifier, pure=_pure),
                  f"hidden random op #{_k}", True)
# every kind of value and attribute, each once, in a shuffled order
_order = _rng.permutation(len(VALUE_KINDS))
_check_record(OpSpec("Npu_EveryKindOp", "every_kind", "one operand of every kind",
                     tuple((f"v{i}", sorted(VALUE_KINDS)[j]) for i, j in enumerate(_order)),
                     tuple((f"a{i}", k) for i, k in enumerate(sorted(ATTRIBUTE_KINDS, key=lambda _: _rng.random()))),
                     (("r0", "f32"), ("r1", "memref")), True, True), "hidden: every kind of operand and attribute", True)
_check_record(OpSpec("Npu_NopOp", "nop", "do nothing", (), (), (), False, False), "hidden: no operands at all", True)
### END HIDDEN TESTS

# %% [markdown]
# **The lowering.** `infopt.mlir.npu.lower` replaces a memref `linalg.matmul` by a loop nest of npu ops: the
# schedule of unit 07's driver, with tile sizes from the accelerator's config (`tile_sizes(M, N, K, config)`:
# `TM` rows of A per block as the SRAMs allow, `TN` = the array's columns, `TK` = its rows for weight-stationary,
# each capped by the matmul's own size).
# Edge tiles are smaller, so their sizes are computed in the loops with `arith.minsi`. The builder `NpuBuilder`
# turns Python ints into constants; canonicalize removes the loops that run once (here the row-block loop: TM = M),
# CSE merges the repeated constants, and a small pattern of ours (`FoldIndexMin`) folds the `min(10, 10)` such a
# loop leaves behind, which xDSL's canonicalize does not:

# %%
from infopt.accel import AccelConfig, AccelError, matmul_cycles
from infopt.mlir.npu import lower_to_npu, matmul_module, run_on_npu
from infopt.mlir.npu.build import NpuBuilder
from infopt.mlir.npu.commands import tile_sizes
from infopt.mlir.npu.lower import LowerMatmulToNpu, operand_type

acc_cfg = AccelConfig(4, 4, "ws", "int8", in_sram_bytes=96)
npu_module = lower_to_npu(matmul_module(10, 5, 6, acc_cfg), acc_cfg)
print("tile sizes (TM, TN, TK):", tile_sizes(10, 5, 6, acc_cfg))
print(print_ir(npu_module))

# %% [markdown]
# **The emitter** runs the lowered function in xDSL's interpreter, where each npu op appends its command to unit
# 07's command stream (every loop index and address evaluated), and the stream runs on the systolic simulator.
# The attributes of `npu.matmul` are checked, not just carried: `dataflow` must be the array's, `dtype` the
# operands' element type, the `tile` bounds `[TM, TN, TK]` must fit the array under that dataflow, and every tile
# the loops issue must stay inside them. A lowering that writes them wrong is refused, naming the op and the
# attribute:

# %%
_r = np.random.default_rng(0)
A8 = _r.integers(-128, 128, (10, 6), dtype=np.int8)
B8 = _r.integers(-128, 128, (6, 5), dtype=np.int8)
C8, npu_stats, npu_program = run_on_npu(npu_module, A8, B8, acc_cfg)
print(npu_program.asm(limit=8))
print("equals numpy:", np.array_equal(C8, A8.astype(np.int32) @ B8.astype(np.int32)),
      f"| simulated {npu_stats.cycles} cycles, unit 07's formula {matmul_cycles(10, 5, 6, acc_cfg)}")
try:
    run_on_npu(npu_module, A8, B8, AccelConfig(4, 4, "os", "int8", in_sram_bytes=96))
except AccelError as err:
    print("the same program on an output-stationary array:", err)

# %% [markdown]
# ### Exercise 8 — the `linalg.matmul → npu` lowering, on a cycle budget (4 points)
#
# Write `emit_npu_schedule(nb, A, B, C, config)`: with the builder `nb` (an `NpuBuilder` placed where the
# `linalg.matmul` was; `A`, `B`, `C` are its memref operands, `M, K = A.type.get_shape()`,
# `N = B.type.get_shape()[1]`), emit a loop nest of npu ops that computes `C = A @ B` on the accelerator in no more
# simulated cycles than unit 07's driver: `matmul_cycles(M, N, K, config)` from `infopt.accel`. The driver is
# `compile_matmul` in `infopt.accel.driver`, its tiling `infopt.accel.tiling` and the formula `infopt.accel.cycles`:
# read them, then choose your own tile sizes and loop order (the driver's are one answer; fewer DMA transfers beat
# it). What the accelerator takes, and what each command costs:
#
# - `nb.matmul(a, b, c, m, n, k, acc, tile, dataflow, dtype)` multiplies the m × k block stored row-major at byte
#   `a` of the `in` SRAM by the k × n block at byte `b` of `wt` into the m × n accumulators at byte `c` of `out`
#   (adding to them when `acc` is true). The array takes k ≤ rows and n ≤ cols under weight stationary (`ws`),
#   m ≤ rows and n ≤ cols under output stationary (`os`); it costs `tile_cycles(m, n, k, config)`
#   (`infopt.accel.cycles`);
# - `nb.dma_load(src, row, col, rows, cols, buffer, addr)` copies `src[row:row+rows, col:col+cols]` row-major to
#   byte `addr` of `buffer` ("in" or "wt"; operands take `config.operand_dtype.itemsize` bytes), and
#   `nb.dma_store(dst, row, col, rows, cols, addr)` copies accumulators (`config.acc_dtype.itemsize` bytes each) from
#   `out` back; each transfer of b bytes costs `config.dma_setup_cycles + ceil(b / config.dma_bytes_per_cycle)`;
# - every region must fit its SRAM (`config.in_sram_bytes`, `wt_sram_bytes`, `out_sram_bytes`), and commands run one
#   after another.
#
# Build loops with `with nb.loop(lower, upper, step) as iv:`; `nb.min`, `nb.sub`, `nb.mul`, `nb.add` and
# `nb.greater` build index arithmetic (`help(NpuBuilder)`). The rules:
#
# 1. C equals numpy's `A @ B` (exactly for int8, to 1e-5 for float32);
# 2. the simulated cycles are at most `matmul_cycles(M, N, K, config)`;
# 3. every npu op sits inside an `scf.for` built with `nb.loop`: loop bounds, steps and the tile attribute are
#    Python ints, and offsets, edge sizes, addresses and `acc` are computed in the IR; the loops repeat the ops, so
#    the IR holds one `npu.dma_load` of A, one of B, one `npu.matmul` and one `npu.dma_store`, whatever the sizes;
# 4. every `npu.matmul` carries `dataflow` = `config.dataflow`, `dtype` = `operand_type(config)` and `tile` = your
#    tiling's bounds `(TM, TN, TK)`, the largest m, n and k of the matmuls it issues;
# 5. your function computes its tiling from `config` itself: do not call the library's `emit_matmul_schedule`,
#    `compile_matmul`, `tiling` or `tile_sizes`.
#
# The tests lower a fresh `linalg.matmul` with your schedule (`lower_matmul_with(emit_npu_schedule, M, N, K,
# config)` from `infopt.mlir.npu.probes`), turn the IR into the command stream and run it on the simulator, for
# random shapes that are not multiples of the tiles, random arrays, dataflows, number formats, SRAM sizes and DMA
# costs.

# %% solution=true grade_id="npu_schedule"
def emit_npu_schedule(nb: NpuBuilder, A, B, C, config: AccelConfig) -> None:
    """Emit a tiled loop nest of npu ops for C = A @ B within the driver's cycle budget."""
    ### BEGIN SOLUTION
    M, K = A.type.get_shape()
    N = B.type.get_shape()[1]
    isz, asz = config.operand_dtype.itemsize, config.acc_dtype.itemsize
    # the largest tiles the SRAMs and the array allow: a row block of A stays in `in` for every column block
    if config.dataflow == "ws":     # weights on the array: k <= rows; the block's accumulators fill `out`
        TK = min(config.rows, K)
        TM = min(M, config.in_sram_bytes // (K * isz), config.out_sram_bytes // (config.cols * asz))
    else:                           # outputs on the array: m <= rows; k is as long as `wt` allows
        TM = min(M, config.rows, config.in_sram_bytes // (K * isz))
        TK = min(K, config.wt_sram_bytes // (config.cols * isz))
    TN = min(config.cols, N)
    with nb.loop(0, M, TM) as m0:
        mt = nb.min(TM, nb.sub(M, m0))
        with nb.loop(0, K, TK) as k0:
            kt = nb.min(TK, nb.sub(K, k0))
            nb.dma_load(A, m0, k0, mt, kt, "in", nb.mul(nb.mul(mt, k0), isz))
        with nb.loop(0, N, TN) as n0:
            nt = nb.min(TN, nb.sub(N, n0))
            with nb.loop(0, K, TK) as k0:
                kt = nb.min(TK, nb.sub(K, k0))
                nb.dma_load(B, k0, n0, kt, nt, "wt", 0)
                nb.matmul(nb.mul(nb.mul(mt, k0), isz), 0, 0, mt, nt, kt, nb.greater(k0, 0), (TM, TN, TK),
                          config.dataflow, operand_type(config))
            nb.dma_store(C, m0, n0, mt, nt, 0)
    ### END SOLUTION


# %% grade_id="npu_schedule_test" points=4
import dataclasses
from collections import Counter

from infopt.accel import AccelError, MatMul, matmul_cycles
from infopt.mlir.npu.probes import lower_matmul_with


def _check_schedule(M: int, N: int, K: int, cfg: AccelConfig, seed: int, label: str, hidden: bool) -> None:
    r = np.random.default_rng(seed)
    if cfg.dtype == "int8":
        A, B = r.integers(-128, 128, (M, K), dtype=np.int8), r.integers(-128, 128, (K, N), dtype=np.int8)
        want = A.astype(np.int32) @ B.astype(np.int32)
    else:
        A, B = r.standard_normal((M, K)).astype(np.float32), r.standard_normal((K, N)).astype(np.float32)
        want = A @ B
    emit = forbidding(emit_npu_schedule, "infopt.mlir.npu.lower:emit_matmul_schedule",
                      "infopt.accel.driver:compile_matmul", "infopt.accel.tiling:tiling",
                      "infopt.mlir.npu.commands:tile_sizes", exercise="emit_npu_schedule")
    cfg = dataclasses.replace(cfg, dataflow="".join(list(cfg.dataflow)))   # a string made at run time, as a user's is
    what = f"M={M} N={N} K={K} on {cfg}"
    with case(label, show=lambda: what, hidden=hidden):
        module = call_student(lower_matmul_with, emit, M, N, K, cfg, fingerprint=lambda a: 0,
                              name="LowerMatmulToNpu with your emit_npu_schedule")
        left = [op.name for op in module.walk() if op.name.startswith("linalg.")]
        check_true(not left, f"the lowered function still holds {left}")
        npu_ops = [op for op in module.walk() if op.name.startswith("npu.")]
        check_true(bool(npu_ops), f"your schedule wrote no npu op ({what})")
        outside = [op.name for op in npu_ops if not _in_a_loop(op)]
        check_true(not outside, f"{len(outside)} npu ops ({outside[:1]} first) sit outside every scf.for: the schedule "
                   f"is a loop nest built with nb.loop, its offsets, edge sizes and addresses computed in the IR "
                   f"({what})")
        kinds = Counter(op.name + (f" to {op.buffer.data!r}" if op.name == "npu.dma_load" else "") for op in npu_ops)
        once = {"npu.dma_load to 'in'": 1, "npu.dma_load to 'wt'": 1, "npu.matmul": 1, "npu.dma_store": 1}
        check_true(dict(kinds) == once, f"your IR holds {dict(kinds)}: the loops repeat the ops, so the IR holds one "
                   f"npu.dma_load of A, one of B, one npu.matmul and one npu.dma_store whatever the sizes; a schedule "
                   f"unrolled in Python, whole or in part, or with copies for the edge tiles, writes more ({what})")
        matmuls = [op for op in npu_ops if op.name == "npu.matmul"]
        for op in matmuls:
            props = (op.dataflow.data, op.dtype)
            check_true(props == (cfg.dataflow, operand_type(cfg)),
                       f"npu.matmul carries dataflow {cfg.dataflow!r} (config.dataflow) and dtype {operand_type(cfg)} "
                       f"(operand_type(config)); yours has dataflow {props[0]!r}, dtype {props[1]} ({what})")
        try:
            C, stats, program = run_on_npu(module, A, B, cfg)
        except AccelError as err:
            check_true(False, f"the simulator rejected your command stream: {err}")
        if cfg.dtype == "int8":
            check_true(np.array_equal(C, want), f"C computed by your schedule differs from numpy at "
                                                f"{np.argwhere(C != want)[:3].tolist()} ({what})")
        else:
            check_true(np.allclose(C, want, rtol=1e-5, atol=1e-5),
                       f"C computed by your schedule differs from numpy by up to {float(np.abs(C - want).max()):.3g} "
                       f"({what})")
        issued = [(c.m, c.n, c.k) for c in program if isinstance(c, MatMul)]
        largest = tuple(max(t[i] for t in issued) for i in range(3))
        tiles = sorted({tuple(int(v) for v in op.tile.get_values()) for op in matmuls})
        check_true(tiles == [largest], f"the tile attribute holds your tiling's bounds (TM, TN, TK), the largest m, n "
                   f"and k of the matmuls it issues: {largest}; your npu.matmul ops carry {tiles} ({what})")
        budget = matmul_cycles(M, N, K, cfg)
        check_true(stats.cycles <= budget, f"your schedule takes {stats.cycles} simulated cycles; unit 07's driver "
                   f"takes {budget} (matmul_cycles) for this matmul, the budget ({len(program)} commands: "
                   f"{dict(Counter(type(c).__name__ for c in program))}; {what})")


def _in_a_loop(op) -> bool:
    parent = op.parent_op()
    while parent is not None:
        if parent.name == "scf.for":
            return True
        parent = parent.parent_op()
    return False


_check_schedule(10, 5, 6, AccelConfig(4, 4, "ws", "int8", in_sram_bytes=96), 0, "the example above", False)
_check_schedule(9, 7, 11, AccelConfig(4, 3, "os", "float32", wt_sram_bytes=48), 1, "output-stationary float32",
                False)
_check_schedule(13, 6, 9, AccelConfig(3, 4, "ws", "float32", in_sram_bytes=200), 2, "weight-stationary float32",
                False)
print("emit_npu_schedule: visible tests passed")
### BEGIN HIDDEN TESTS
_rng = grading_rng(6)
for _trial in range(4):
    _df, _dt = ("ws", "os")[_trial % 2], ("float32", "int8", "float32", "int8")[_trial]
    _R, _C = (int(v) for v in _rng.integers(2, 5, 2))
    _M, _N, _K = (int(v) for v in _rng.integers(_R + 1, 3 * _R + 2, 3))
    _isz = 1 if _dt == "int8" else 4
    _cfg = AccelConfig(_R, _C, _df, _dt, in_sram_bytes=int(_rng.integers(2, 5)) * _K * _isz,
                       wt_sram_bytes=int(_rng.integers(_R * _C, 3 * _R * _C)) * _isz,
                       dma_bytes_per_cycle=int(_rng.integers(3, 20)), dma_setup_cycles=int(_rng.integers(0, 10)))
    _check_schedule(_M, _N, _K, _cfg, int(_rng.integers(1 << 30)), f"hidden random case #{_trial}", True)
_M, _N, _K = (int(v) for v in _rng.integers(3, 8, 3))     # one array row: TK = 1, so k0 = 1 must accumulate
_check_schedule(_M, _N, _K, AccelConfig(1, int(_rng.integers(2, 4)), "ws", "int8"), int(_rng.integers(1 << 30)),
                "hidden: a one-row array", True)
_R, _C = (int(v) for v in _rng.integers(2, 5, 2))          # the out SRAM (TM x C results) sets TM, not the in SRAM
_TM = _R + int(_rng.integers(1, 3))                        # (N >= C: some column block fills the array's columns)
_check_schedule(2 * _TM + 1, int(_rng.integers(_C, 2 * _C + 1)), int(_rng.integers(3, 9)),
                AccelConfig(_R, _C, "ws", "int8", out_sram_bytes=4 * _C * _TM), int(_rng.integers(1 << 30)),
                "hidden: row blocks limited by the out SRAM", True)
for _df in ("ws", "os"):   # a matmul smaller than the array every way: the tiles are smaller than the array
    _R, _C = (int(v) for v in _rng.integers(3, 6, 2))
    _check_schedule(int(_rng.integers(1, _R)), int(_rng.integers(1, _C)), int(_rng.integers(1, _R)),
                    AccelConfig(_R, _C, _df, str(_rng.choice(["int8", "float32"]))), int(_rng.integers(1 << 30)),
                    f"hidden: fewer rows, columns and less depth than the {_df} array", True)
for _df in ("ws", "os"):   # SRAMs that bind: `in` holds fewer rows of A (all of K) than the array has, and `wt` less
    _R, _C = (int(v) for v in _rng.integers(3, 6, 2))   # than all of K for a block of columns
    _M, _K, _N = int(_rng.integers(2 * _R, 4 * _R)), int(_rng.integers(2 * _R, 4 * _R)), int(_rng.integers(_C + 1, 3 * _C))
    _dt = str(_rng.choice(["int8", "float32"]))
    _isz = 1 if _dt == "int8" else 4
    # wt holds at most half of K's rows of a column block: a row panel sized by one K chunk instead of all of K holds
    # at least twice the rows `in` takes
    _check_schedule(_M, _N, _K, AccelConfig(_R, _C, _df, _dt, in_sram_bytes=int(_rng.integers(1, _R)) * _K * _isz,
                                            wt_sram_bytes=int(_rng.integers(_R, _K // 2 + 1)) * _C * _isz),
                    int(_rng.integers(1 << 30)), f"hidden: small in and wt SRAMs, {_df}", True)
# transfers that cost mostly their setup: a loop order chosen by the bytes it moves alone makes more transfers and
# runs over the budget (one such matmul every grading, and a random one per dataflow)
_check_schedule(4, 15, 6, AccelConfig(2, 4, "os", "float32", in_sram_bytes=127, dma_bytes_per_cycle=6,
                                      dma_setup_cycles=28), int(_rng.integers(1 << 30)),
                "hidden: DMA setup dominates (a fixed matmul)", True)
for _df in ("ws", "os"):
    _R, _C = (int(v) for v in _rng.integers(2, 5, 2))
    _check_schedule(int(_rng.integers(2, 3 * _R)), int(_rng.integers(2 * _C, 5 * _C)), int(_rng.integers(2, 3 * _R)),
                    AccelConfig(_R, _C, _df, str(_rng.choice(["int8", "float32"])),
                                dma_bytes_per_cycle=int(_rng.integers(2, 8)), dma_setup_cycles=int(_rng.integers(20, 60))),
                    int(_rng.integers(1 << 30)), f"hidden: DMA setup dominates, {_df}", True)
### END HIDDEN TESTS

# %% [markdown]
# ## 12. How IREE organises the same ideas
#
# [IREE](https://iree.dev) is a production MLIR compiler and runtime. Give it the digits CNN as ONNX:
# `iree-import-onnx` writes the `torch` dialect, `iree-compile` lowers it for `llvm-cpu`, and `iree.runtime` runs
# the result (here with the single-threaded `local-sync` driver). It agrees with onnxruntime:

# %%
from infopt.mlir.iree import compile_for_cpu, dispatch_configs, import_onnx
from infopt.runtime.onnxruntime_session import ort_session

x_one = digits.x_test[:1].astype(np.float32)
cnn_proto = export_onnx(digits_cnn(), torch.from_numpy(x_one))
cnn_torch_mlir = import_onnx(cnn_proto)
print(cnn_torch_mlir[cnn_torch_mlir.index('torch.operator "onnx.Conv'):][:300], "...")
iree_cnn = compile_for_cpu(cnn_torch_mlir, "main_graph", "onnx", phases=True)
ort_cnn = ort_session(cnn_proto, level="all", threads=1)
print(f"compiled in {iree_cnn.compile_seconds:.1f} s; max |IREE - onnxruntime| = "
      f"{float(np.abs(iree_cnn(x_one)[0] - ort_cnn.run(None, {'input': x_one})[0]).max()):.1e}")

# %% [markdown]
# The same compile dumped its twelve **compilation phases**. The stages we ran with mlir-opt are all inside:

# %%
phase_ir = {name: ir for _, name, ir in iree_cnn.phases}
from infopt.mlir.pipeline import dialect_counts

for number, name, ir in iree_cnn.phases:
    counts = dialect_counts(ir)
    top = ", ".join(f"{d} {n}" for d, n in sorted(counts.items(), key=lambda kv: -kv[1])[:5])
    print(f"{number:2}. {name:26} {top}")

# %% [markdown]
# | our stage (sections 4–8) | where IREE does it |
# |---|---|
# | graph → `linalg` on tensors (our emitter; `tosa-to-linalg`) | `input` (torch → linalg), `global-optimization` (fusion, constant folding, layout) |
# | grouping ops into kernels | `dispatch-creation` / `flow`: each group of fused linalg ops becomes a **dispatch region**, a kernel with its own function |
# | scheduling work and memory | `stream`: asynchronous execution, buffer allocation for the whole program |
# | tiling + vectorization (our transform schedule) | `executable-configurations`: a **lowering_config** with tile sizes per dispatch, chosen by a heuristic per target |
# | bufferization, loops, vector, llvm dialect | `executable-targets`: each dispatch is tiled, bufferized, vectorized and lowered to the llvm dialect (one-shot bufferization runs per dispatch) |
# | clang + ctypes | `hal` / `vm`: the dispatches compiled to an ELF embedded in a VM bytecode module; the runtime schedules them |
#
# The tiling IREE chose for each dispatch (compare with our `(64, 128, 64) / (4, 16, 32)`):

# %%
for cfg in dispatch_configs(phase_ir["executable-configurations"]):
    print(f"{cfg['dispatch'][:46]:46} {cfg['pipeline']:28} {cfg['tiles']}")

# %% [markdown]
# How do they compare? One 8 x 8 image is about 0.34 million multiply-adds, tens of microseconds of arithmetic,
# so at batch 1 both spend much of a call on fixed costs: for IREE the VM call, buffer bookkeeping and the
# workgroup loop of each dispatch; for onnxruntime its per-node bookkeeping. Timed here as a pair on one thread
# (`iree_against_onnxruntime`, the same function the benchmark uses), with the benchmark's figures beside them:

# %%
from infopt.mlir.iree import iree_against_onnxruntime

live = iree_against_onnxruntime(iree_cnn, ort_cnn, x_one, repeats=21)
ratio = live["iree_time_over_ort_time"]
print(f"IREE {live['iree_s'] * 1e6:.1f} us, onnxruntime {live['onnxruntime_s'] * 1e6:.1f} us per image "
      f"(medians of 21, batch 1): IREE's time / onnxruntime's = {ratio:.2f} (paired median)")
print("So at batch 1 " + ("the two are close" if ratio < 1.3 else f"onnxruntime is {ratio:.1f}x faster" if ratio > 1
                          else f"IREE is {1 / ratio:.1f}x faster") + " on this machine.")
shipped = bench["cnn_iree_time_over_ort_time"]
print(f"benchmark (shipped, {bench['when']}): IREE's time / onnxruntime's = {shipped['1']:.2f} at batch 1 "
      f"({bench['cnn_iree_us_per_batch']['1']:.0f} against {bench['cnn_ort_us_per_batch']['1']:.0f} us), "
      f"{shipped['64']:.2f} at batch 64")

# %% [markdown]
# At batch 64 arithmetic dominates, and the benchmark's batch-64 ratio above says how far onnxruntime pulls ahead:
# its convolutions are hand-written MLAS kernels (im2col and a vectorized GEMM), while IREE generates each
# dispatch's code from per-target heuristics that are not tuned for convolutions with 1–32 channels on 8 x 8
# images. (That is our reading of the numbers, not a profile.)

# %% [markdown]
# ## Wrap-up
#
# * MLIR is one data structure — operations with regions of blocks, open sets of types and attributes — and many
#   dialects; a compiler is a sequence of conversions between them.
# * Progressive lowering keeps each level's information until the step that uses it: linalg keeps "this is a
#   matmul" until tiling, vector keeps lanes until LLVM.
# * Bufferization is a decision per write: in place unless an old value is still read or the buffer is not ours.
# * Affine dependences decide which loop transformations are legal; mlir-opt checks some, you check the rest.
# * A custom dialect is a few op definitions with verifiers; a lowering into it is a rewrite pattern that writes a
#   loop nest; an emitter turns it into what the hardware runs.
# * IREE is these same steps at production scale, with a runtime that schedules the kernels.

# %%
print(f"notebook ran in {time.perf_counter() - _T0:.1f} s")
