"""infopt.mlir.matmul: the three matmul pipelines compute the product; the tiling schedule checks its tile sizes."""
import numpy as np
import pytest

from infopt.mlir.emit import emit_graph
from infopt.mlir.execute import compile_module
from infopt.mlir.matmul import matmul_graph, matmul_pipelines, tiled_pipeline, transform_script
from infopt.mlir.pipeline import dialect_counts, lower
from infopt.mlir.tools import MlirToolError

rng = np.random.default_rng()


@pytest.mark.parametrize("name", list(matmul_pipelines()))
def test_every_matmul_pipeline_computes_the_product(name):
    M, N, K = 128, 256, 64
    c = compile_module(emit_graph(matmul_graph(M, N, K)), matmul_pipelines()[name])
    a, b = rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32)
    np.testing.assert_allclose(c({"a": a, "b": b})["c"], a @ b, rtol=1e-4, atol=1e-4)


def test_the_tiled_stage_leaves_vector_fmas_and_a_promoted_copy():
    low = lower(emit_graph(matmul_graph(128, 128, 128)).text, tiled_pipeline(), until="tiled")
    tiled = low["tiled"]
    assert "vector.fma" in tiled or "vector.outerproduct" in tiled
    assert "memref.copy" in tiled or "linalg.copy" in tiled        # the promoted B tile
    assert dialect_counts(tiled).get("scf", 0) >= 5   # two levels of three loops (N = 128 is one cache tile)


def test_tile_sizes_are_checked():
    with pytest.raises(ValueError, match="must divide"):
        transform_script((64, 128, 64), (6, 16, 32))
    with pytest.raises(ValueError, match="three positive sizes"):
        transform_script((64, 128), (4, 16, 32))


def test_sizes_that_are_not_multiples_of_the_outer_tile_fail_in_mlir_opt():
    with pytest.raises(MlirToolError):
        compile_module(emit_graph(matmul_graph(100, 128, 64)), tiled_pipeline())
