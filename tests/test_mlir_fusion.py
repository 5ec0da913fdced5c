"""infopt.mlir.fusion: matmul + bias + ReLU tiled and fused with the transform dialect computes the layer, inside one
loop over output tiles, with tile-sized intermediates instead of whole M x N ones."""
import numpy as np
import pytest

from infopt.mlir.emit import emit_graph
from infopt.mlir.execute import compile_module
from infopt.mlir.fusion import fuse_script, intermediate_bytes, layer_graph, layer_pipelines
from infopt.mlir.pipeline import lower, op_counts


def _operands(M, N, K, seed=0):
    r = np.random.default_rng(seed)
    return {"a": r.standard_normal((M, K)).astype(np.float32), "b": r.standard_normal((K, N)).astype(np.float32),
            "bias": r.standard_normal(N).astype(np.float32)}


@pytest.mark.parametrize("shape,tile", [((64, 96, 32), (16, 32)), ((40, 24, 7), (8, 8)), ((30, 20, 1), (15, 4))])
def test_both_pipelines_compute_the_layer(shape, tile):
    M, N, K = shape
    module = emit_graph(layer_graph(M, N, K))
    feeds = _operands(M, N, K)
    want = np.maximum(feeds["a"] @ feeds["b"] + feeds["bias"], 0)
    for name, stages in layer_pipelines(M, N, tile).items():
        got = next(iter(compile_module(module, stages)(feeds).values()))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4, err_msg=name)


def test_fusion_puts_every_op_in_one_tile_loop_and_shrinks_the_intermediates():
    M, N, K, tile = 64, 96, 32, (16, 32)
    text = emit_graph(layer_graph(M, N, K)).text
    unfused = lower(text, layer_pipelines(M, N, tile)["unfused"])
    fused = lower(text, layer_pipelines(M, N, tile)["tiled and fused"])
    assert intermediate_bytes(unfused["bufferized"]) == 2 * M * N * 4       # the matmul's and the add's results
    assert intermediate_bytes(fused["bufferized"]) == 2 * tile[0] * tile[1] * 4
    loop = fused["fused"]
    body = loop[loop.index("scf.forall"):]
    assert op_counts(loop).get("scf.forall") == 1
    for op in ("linalg.fill", "linalg.matmul", "linalg.generic"):   # all of them inside the tile loop
        assert op in body and op_counts(loop)[op] == op_counts(body)[op]


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="two positive sizes"):
        fuse_script((16,))
    with pytest.raises(ValueError, match="M must be a positive int"):
        layer_graph(0, 4, 4)
    with pytest.raises(ValueError, match="must divide the output"):
        layer_pipelines(30, 20, (16, 32))
