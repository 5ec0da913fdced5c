"""A matmul through upstream MLIR three ways: plain loops, the affine vectorizer, and a transform-dialect schedule
that tiles for the caches, tiles again for registers, vectorizes and lowers the contraction to FMAs.

    pipeline = tiled_pipeline(outer=(64, 128, 64), inner=(4, 16, 32))   # stages for compile_module
    compile_module(emit_graph(matmul_graph(512, 512, 512)), pipeline)

Sizes are (M, N, K) everywhere: `outer` and `inner` tile M, N and K, and the matmul's sizes must be multiples of
`outer` (the register tiles are static vectors). Promoting B (copying each B tile into a contiguous buffer) is what
keeps N = 512 fast: B's rows are 2 KiB apart there, so a tile's rows fall into few L1 sets and evict each other
(measured on a Zen 3: ~29 GFLOP/s without, ~55-62 with, numpy ~78).
"""
from __future__ import annotations

from ..ir.graph import Graph
from ..ir.types import TensorType
from .pipeline import CPU_PIPELINE, MODEL_PIPELINE, Stage, with_stage

TRANSFORM = """module attributes {{transform.with_named_sequence}} {{
  transform.named_sequence @__transform_main(%root: !transform.any_op {{transform.readonly}}) {{
    %mm = transform.structured.match ops{{["linalg.matmul"]}} in %root : (!transform.any_op) -> !transform.any_op
    // cache tiles: an (M, N, K) block of the product per iteration of three loops
    %t1, %l1:3 = transform.structured.tile_using_for %mm tile_sizes [{outer}]
      : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
{promote}    // register tiles: what one vector.contract computes
    %t2, %l2:3 = transform.structured.tile_using_for %p tile_sizes [{inner}]
      : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.structured.vectorize %t2 : !transform.any_op
    %f = transform.structured.match ops{{["func.func"]}} in %root : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f {{
      transform.apply_patterns.vector.reduction_to_contract
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.canonicalization
    }} : !transform.any_op
    transform.apply_patterns to %f {{
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerparallel"
      transform.apply_patterns.vector.transfer_to_scf max_transfer_rank = 1 full_unroll = true
      transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
      transform.apply_patterns.vector.lower_shape_cast
      transform.apply_patterns.vector.lower_transpose lowering_strategy = "shuffle_1d"
      transform.apply_patterns.canonicalization
    }} : !transform.any_op
    transform.yield
  }}
}}
"""


def matmul_graph(M: int, N: int, K: int) -> Graph:
    """A graph with one (M, K) x (K, N) MatMul of inputs "a" and "b" (output "c")."""
    g = Graph(f"matmul_{M}x{N}x{K}")
    g.add_input("a", TensorType((M, K)))
    g.add_input("b", TensorType((K, N)))
    g.outputs = g.add_node("MatMul", ["a", "b"], outputs=["c"]).outputs
    return g


PROMOTE = """    // promotion: copy the A and B tiles into contiguous buffers (no cache-set conflicts at power-of-two strides)
    %p = transform.structured.promote %t1 {{ operands_to_promote = [{ops}], use_full_tiles_by_default }}
      : (!transform.any_op) -> !transform.any_op
"""


def transform_script(outer: tuple[int, int, int], inner: tuple[int, int, int], promote: tuple[int, ...] = ()) -> str:
    """The transform-dialect schedule: tile (M, N, K) by `outer`, then by `inner`, vectorize, lower to FMAs."""
    for name, sizes in (("outer", outer), ("inner", inner)):
        if len(sizes) != 3 or min(sizes) < 1:
            raise ValueError(f"{name} tile must be three positive sizes (M, N, K), got {sizes}")
    if any(o % i for o, i in zip(outer, inner)):
        raise ValueError(f"inner tile {inner} must divide the outer tile {outer} (the vector sizes are static)")
    promo = PROMOTE.format(ops=", ".join(map(str, promote))) if promote else "    %p = transform.merge_handles %t1 : !transform.any_op\n"
    return TRANSFORM.format(outer=", ".join(map(str, outer)), inner=", ".join(map(str, inner)), promote=promo)


def tiled_stage(outer: tuple[int, int, int] = (64, 128, 64), inner: tuple[int, int, int] = (4, 16, 32),
                promote: tuple[int, ...] = (1,)) -> Stage:
    """The stage that applies `transform_script` to the bufferized matmul."""
    return Stage("tiled", ("--canonicalize", "--cse"),
                 f"transform dialect: tile {outer} for caches, promote operands {promote}, tile {inner} for registers, "
                 "vectorize, contraction -> FMAs", transform_script(outer, inner, promote))


def tiled_pipeline(outer: tuple[int, int, int] = (64, 128, 64), inner: tuple[int, int, int] = (4, 16, 32),
                   promote: tuple[int, ...] = (1,)) -> tuple[Stage, ...]:
    """MODEL_PIPELINE with the tiling schedule after bufferization (its linalg.fill still goes to loops)."""
    return with_stage(MODEL_PIPELINE, "bufferized", tiled_stage(outer, inner, promote))


def matmul_pipelines() -> dict[str, tuple[Stage, ...]]:
    """The notebook's three matmul pipelines, by name."""
    return {"loops": MODEL_PIPELINE, "affine vectorizer": CPU_PIPELINE, "tiled + vectorized": tiled_pipeline()}


def matmul_reading(gflops: dict[str, float]) -> str:
    """What the notebook's GFLOP/s bars say, written from the measured numbers (keys: matmul_pipelines()'s names and
    "numpy (1 thread)"), so the sentence agrees with the chart on every run."""
    loops, vec, tiled = gflops["loops"], gflops["affine vectorizer"], gflops["tiled + vectorized"]
    numpy = gflops["numpy (1 thread)"]
    gain = vec / loops
    vec_says = ("gains almost nothing over the plain loops" if gain < 1.5 else
                "helps, but is far from the tiled schedule" if gain < 0.25 * tiled / loops else
                "gains nearly as much as the tiled schedule")
    faster = "faster than" if tiled > numpy else "slower than"
    return (f"The affine vectorizer {vec_says} ({vec:.1f} against {loops:.1f} GFLOP/s, {gain:.1f}x): it vectorizes "
            f"the innermost loop but leaves the loop order and the memory traffic as they were. The transform "
            f"schedule (tiles that fit the caches, a register tile, outer-product FMAs) gains {tiled / loops:.0f}x over "
            f"the loops and runs at {tiled:.1f} GFLOP/s, {faster} single-threaded numpy's {numpy:.1f} "
            f"(numpy's time / the schedule's time = {tiled / numpy:.2f}).")
