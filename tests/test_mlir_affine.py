"""infopt.mlir.affine: dependences equal mlir-opt's own analysis on random uniform nests, and the legality verdicts
agree with what mlir-opt's transformations do to the results."""
import itertools

import numpy as np
import pytest

from infopt.mlir.affine import (Loop, Nest, Ref, Statement, dependences, interchange_is_legal, mlir_dependences,
                                mlir_parallel_loops, mlir_permutation_map, mlir_permuted, parallel_loops, run_nest_mlir,
                                tiling_is_legal)
from infopt.mlir.tools import mlir_opt


def random_nest(r: np.random.Generator) -> Nest:
    """2 or 3 loops, 1 or 2 statements over 1 or 2 arrays; indices iv + c (c in -2..2), or a constant."""
    n = int(r.integers(2, 4))
    names = ["i", "j", "k"][:n]
    loops = tuple(Loop(v, 2, 2 + int(r.integers(2, 6))) for v in names)
    arrays = ["A", "B"][: int(r.integers(1, 3))]
    rank = {a: int(r.integers(1, n + 1)) for a in arrays}
    dims = {a: [str(v) for v in r.permutation(names)[: rank[a]]] for a in arrays}   # each array dim's loop

    def ref(a: str) -> Ref:
        idx = []
        for var in dims[a]:
            if r.random() < 0.15:
                idx.append((None, int(r.integers(0, 4))))
            else:
                idx.append((var, int(r.integers(-2, 3))))
        return Ref(a, tuple(idx))
    body = tuple(Statement(ref(str(r.choice(arrays))), tuple(ref(str(r.choice(arrays)))
                                                             for _ in range(int(r.integers(1, 3)))))
                 for _ in range(int(r.integers(1, 3))))
    shapes = {a: (12,) * rank[a] for a in arrays}
    return Nest(loops, body, shapes)


NESTS = [random_nest(np.random.default_rng(seed)) for seed in range(30)]


def _key(deps):
    return sorted((d.src, d.dst, d.depth, d.components) for d in deps)


@pytest.mark.parametrize("k", range(len(NESTS)))
def test_dependences_equal_mlir_opts_dependence_check(k):
    nest = NESTS[k]
    assert _key(dependences(nest)) == _key(mlir_dependences(nest)), nest.text()


@pytest.mark.parametrize("k", range(0, len(NESTS), 3))
def test_parallel_loops_equal_what_affine_parallelize_converts(k):
    assert parallel_loops(NESTS[k]) == mlir_parallel_loops(NESTS[k]), NESTS[k].text()


A = lambda *ix: Ref("A", tuple(ix))  # noqa: E731
SKEWED = Nest((Loop("i", 1, 10), Loop("j", 0, 9)), (Statement(A(("i", 0), ("j", 0)), (A(("i", -1), ("j", 1)),)),),
              {"A": (10, 10)})
STENCIL = Nest((Loop("i", 1, 9), Loop("j", 1, 9)), (Statement(A(("i", 0), ("j", 0)),
                                                              (A(("i", -1), ("j", 0)), A(("i", 0), ("j", -1)))),),
               {"A": (10, 10)})


def _deps(nest):
    return [d.components for d in dependences(nest)]


def test_the_classic_cases():
    assert _deps(SKEWED) == [((1, 1), (-1, -1))]
    assert not interchange_is_legal(_deps(SKEWED), (1, 0)) and interchange_is_legal(_deps(SKEWED), (0, 1))
    assert not tiling_is_legal(_deps(SKEWED))
    assert interchange_is_legal(_deps(STENCIL), (1, 0)) and tiling_is_legal(_deps(STENCIL))
    assert parallel_loops(SKEWED) == ["j"] and parallel_loops(STENCIL) == []


def test_the_rule_reads_lower_bounds_in_the_new_order():
    deps = [((0, 0), (1, 3), (-2, -1))]
    assert interchange_is_legal(deps, (0, 1, 2))       # (0, +, -): carried by loop 1
    assert not interchange_is_legal(deps, (2, 0, 1))   # loop 2 first: negative
    assert interchange_is_legal(deps, (0, 1, 2)) and not interchange_is_legal(deps, (0, 2, 1))
    assert not interchange_is_legal([((None, 3), (1, 1))], (0, 1))   # unbounded below counts as negative
    assert interchange_is_legal([((0, 0), (0, 0))], (1, 0))           # loop-independent: never forbids
    assert mlir_permutation_map((2, 0, 1)) == [1, 2, 0]
    with pytest.raises(ValueError, match="permutation"):
        interchange_is_legal(deps, (0, 0, 1))


def _arrays(nest, seed=0):
    r = np.random.default_rng(seed)
    return {a: r.standard_normal(s).astype(np.float32) for a, s in nest.shapes.items()}


@pytest.mark.parametrize("nest", [SKEWED, STENCIL, NESTS[4]], ids=["skewed", "stencil", "random"])
def test_legal_interchanges_keep_the_results_and_the_illegal_one_changes_them(nest):
    arrays = _arrays(nest)
    want = run_nest_mlir(nest.to_mlir(), nest, arrays)
    deps = _deps(nest)
    for perm in itertools.permutations(range(len(nest.loops))):
        if perm == tuple(range(len(nest.loops))):
            continue
        got = run_nest_mlir(mlir_permuted(nest, perm), nest, arrays)
        same = all(np.array_equal(got[a], want[a]) for a in want)
        if interchange_is_legal(deps, perm):
            assert same, f"legal permutation {perm} changed the results of\n{nest.text()}"
        elif nest is SKEWED:
            assert not same, "the illegal interchange of the skewed nest kept the results"


def test_tiling_the_skewed_nest_changes_its_results_and_tiling_the_stencil_does_not():
    for nest, legal in ((SKEWED, False), (STENCIL, True)):
        arrays = _arrays(nest, 1)
        want = run_nest_mlir(nest.to_mlir(), nest, arrays)
        tiled = mlir_opt(nest.to_mlir(), "--affine-loop-tile=tile-size=4")
        got = run_nest_mlir(tiled, nest, arrays)
        assert tiling_is_legal(_deps(nest)) == legal
        assert all(np.array_equal(got[a], want[a]) for a in want) == legal


def test_ill_formed_nests_are_refused():
    with pytest.raises(ValueError, match="reaches index"):
        Nest((Loop("i", 0, 10),), (Statement(A(("i", 1)), ()),), {"A": (10,)})
    with pytest.raises(ValueError, match="not a loop"):
        Nest((Loop("i", 0, 3),), (Statement(A(("q", 0)), ()),), {"A": (10,)})
    with pytest.raises(ValueError, match="uniform"):
        dependences(Nest((Loop("i", 0, 3), Loop("j", 0, 3)),
                         (Statement(A(("i", 0)), (A(("j", 0)),)),), {"A": (4,)}))
