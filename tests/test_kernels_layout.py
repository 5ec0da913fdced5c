"""CuTe's layout algebra (infopt.kernels.layout): the worked examples of CuTe's docs (01_layout.md,
02_layout_algebra.md), the admissibility errors of composition and complement, hypothesis checks of the laws
(composition is function composition, coalesce keeps the function, complement completes an injective layout,
logical_divide's mode 0 is the tile), and the matmul ownership map built from zipped_divide."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from infopt.kernels.layout import (
    Layout, blocked_product, coalesce, col_major, complement, composition, logical_divide, logical_product,
    make_layout, matmul_tiling, raked_product, right_inverse, row_major, tiled_divide, tiling_figure,
    zipped_divide,
)

PROPS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.filter_too_much,
                                                                        HealthCheck.too_slow])


def L(shape, stride):
    return Layout(shape, stride)


# ------------------------------------------------------------------------------------------ the Layout itself

def test_layout_maps_colexicographic_indices_and_coordinates():
    lay = L((4, 2), (2, 1))                                   # 4x2 row-major
    assert repr(lay) == "(4,2):(2,1)" and str(lay) == "(4,2):(2,1)"
    assert [lay(i) for i in range(8)] == [0, 2, 4, 6, 1, 3, 5, 7]   # index i is (i % 4, i // 4)
    assert lay(1, 1) == lay((1, 1)) == 3
    assert lay.size == 8 and lay.cosize == 8 and lay.rank == 2 and lay.depth == 1
    np.testing.assert_array_equal(lay.to_array(), [[0, 1], [2, 3], [4, 5], [6, 7]])
    nested = L((2, (2, 2)), (4, (2, 1)))                      # 01_layout.md's hierarchical example family
    assert repr(nested) == "(2,(2,2)):(4,(2,1))" and nested.depth == 2
    assert nested(1, (1, 0)) == 4 + 2 and nested(1, 3) == 4 + 2 + 1 and nested(5) == 4 + 1  # 5: (1, (0, 1))
    assert [m for m in map(repr, nested.modes)] == ["2:4", "(2,2):(2,1)"] and repr(nested[1]) == "(2,2):(2,1)"
    np.testing.assert_array_equal(nested.to_array(), [[nested(i, j) for j in range(4)] for i in range(2)])
    assert repr(Layout((4, 2))) == "(4,2):(1,4)" == repr(col_major((4, 2)))
    assert repr(row_major((4, 2))) == "(4,2):(2,1)" and repr(row_major((2, (3, 4)))) == "(2,(3,4)):(12,(4,1))"
    assert repr(make_layout(L(4, 1), L(3, 8))) == "(4,3):(1,8)"


def test_layout_rejects_bad_input_with_clear_messages():
    with pytest.raises(ValueError, match="shape entries must be ints >= 1"):
        Layout((4, 0), (1, 4))
    with pytest.raises(ValueError, match="same nesting"):
        Layout((4, 2), (1, (4, 1)))
    with pytest.raises(ValueError, match="outside the domain"):
        L((4, 2), (2, 1))(8)
    with pytest.raises(ValueError, match=r"entry 4 is outside \[0, 4\) of the mode 4:2"):
        L((4, 2), (2, 1))(4, 0)
    with pytest.raises(ValueError, match="does not match shape"):
        L((4, 2), (2, 1))(1, 2, 3)
    with pytest.raises(ValueError, match="non-empty"):
        Layout("4")


# ------------------------------------------------------------------------------------------ the docs' examples

def test_coalesce_examples():
    a = L((2, (1, 6)), (1, (6, 2)))
    assert repr(coalesce(a)) == "12:1"
    assert repr(coalesce(a, (1, 1))) == "(2,6):(1,2)"
    assert repr(coalesce(L((2, 4), (1, 2)))) == "8:1" and repr(coalesce(L((2, 4), (4, 1)))) == "(2,4):(4,1)"


def test_composition_examples():
    assert repr(composition(L((6, 2), (8, 2)), L((4, 3), (3, 1)))) == "((2,2),3):((24,2),8)"
    assert repr(composition(L(20, 2), L((5, 4), (4, 1)))) == "(5,4):(8,2)"
    assert repr(composition(L((10, 2), (16, 4)), L((5, 4), (1, 5)))) == "(5,(2,2)):(16,(80,4))"
    a = L((12, (4, 8)), (59, (13, 1)))
    assert repr(composition(a, (L(3, 4), L(8, 2)))) == "(3,(2,4)):(236,(26,1))"    # by-mode tiler
    assert repr(composition(a, (3, 8))) == "(3,(4,2)):(59,(13,1))"                 # a shape as tiler
    assert repr(composition(L(8, 3), L(4, 0))) == "4:0"


def test_composition_raises_where_cute_has_no_layout():
    with pytest.raises(ValueError, match="stride divisibility"):
        composition(L((4, 3), (3, 1)), L(2, 3))              # every 3rd element of a 4-wide mode
    with pytest.raises(ValueError, match="stride divisibility"):
        composition(L((4, 3), (1, 10)), L(4, 3))             # C++ CuTe's weak check would give (2,2):(3,10): wrong
    with pytest.raises(ValueError, match="shape divisibility"):
        composition(L((4, 3), (1, 10)), L(6, 1))             # 6 elements: all 4 of mode 0, then 1.5 columns
    with pytest.raises(ValueError, match="shape divisibility"):
        composition(L((6, 2), (1, 7)), L(4, 1))              # 4 of a 6-long mode: pycute's shape_div refuses it
    with pytest.raises(ValueError, match="has 3 modes"):
        composition(L((4, 2), (1, 4)), (2, 2, 2))


def test_complement_examples():
    assert repr(complement(L(4, 1), 24)) == "6:4"
    assert repr(complement(L(6, 4), 24)) == "4:1"
    assert repr(complement(L((4, 6), (1, 4)), 24)) == "1:0"
    assert repr(complement(L(4, 2), 24)) == "(2,3):(1,8)"
    assert repr(complement(L((2, 4), (1, 6)), 24)) == "3:2"
    assert repr(complement(L((2, 2), (1, 6)), 24)) == "(3,2):(2,12)"
    with pytest.raises(ValueError, match="not defined"):
        complement(L((4, 2), (1, 2)), 16)                    # not injective: offsets 2, 3 twice


def test_divide_and_product_examples():
    assert repr(logical_divide(L((4, 2, 3), (2, 1, 8)), L(4, 2))) == "((2,2),(2,3)):((4,1),(2,8))"
    a = L((9, (4, 8)), (59, (13, 1)))
    tiler = (L(3, 3), L((2, 4), (1, 8)))
    ld = logical_divide(a, tiler)
    assert repr(ld) == "((3,3),((2,4),(2,2))):((177,59),((13,2),(26,1)))"
    assert repr(make_layout(ld[0][0], ld[1][0])) == "(3,(2,4)):(177,(13,2))"       # the docs' tile
    zd = zipped_divide(a, tiler)
    assert [m.size for m in zd[0].modes] == [3, 8] and [m.size for m in zd[1].modes] == [3, 4]
    assert repr(zd[0]) == repr(composition(a, tiler))       # layout<0>(zipped_divide(a, b)) == composition(a, b)
    assert tiled_divide(a, tiler).rank == 3
    assert repr(logical_product(L((2, 2), (4, 1)), L(6, 1))) == "((2,2),(2,3)):((4,1),(2,8))"
    assert repr(blocked_product(L((2, 5), (5, 1)), L((3, 4), (1, 3)))) == "(6,(5,4)):(5,(1,30))"
    rk = raked_product(L((2, 5), (5, 1)), L((3, 4), (1, 3)))
    assert sorted(rk.offsets()) == list(range(120)) and rk.to_array().shape == (6, 20)
    blk = blocked_product(L((2, 5), (5, 1)), L((3, 4), (1, 3))).to_array()
    assert blk.shape == (6, 20) and np.array_equal(blk[:2, :5], [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]])
    inv = right_inverse(L((4, 2), (2, 1)))
    assert [L((4, 2), (2, 1))(inv(i)) for i in range(inv.size)] == list(range(8))


def test_logical_divide_that_does_not_divide_runs_past_the_end_like_cute():
    d = logical_divide(L(6, 1), 4)                          # tiles of 4 over 6 elements: the second one sticks out
    assert repr(d) == "(4,2):(1,4)" and d.cosize == 8


# ------------------------------------------------------------------------------------------ the laws (hypothesis)

SHAPES = st.sampled_from([1, 2, 3, 4, 6, 8])
STRIDES = st.sampled_from([0, 1, 2, 3, 4, 6, 8, 12, 16, 24])


@st.composite
def layouts(draw, max_rank: int = 3, strides=STRIDES) -> Layout:
    r = draw(st.integers(1, max_rank))
    shape = tuple(draw(SHAPES) for _ in range(r))
    stride = tuple(draw(strides) for _ in range(r))
    if r == 1:
        return Layout(shape[0], stride[0])
    if r == 3 and draw(st.booleans()):                      # sometimes nested: (a,(b,c))
        return Layout((shape[0], shape[1:]), (stride[0], stride[1:]))
    return Layout(shape, stride)


def admissible(f, *args):
    try:
        return f(*args)
    except ValueError:
        return None


def injective(lay: Layout) -> bool:
    return len(set(lay.offsets().tolist())) == lay.size


def leaves(lay: Layout) -> list[Layout]:
    """B's rank-1 modes, depth first (what CuTe's composition distributes over)."""
    return [lay] if isinstance(lay.shape, int) else [leaf for mode in lay.modes for leaf in leaves(mode)]


def adds_over_modes(a: Layout, b: Layout) -> bool:
    """A(B(c)) equals the sum over B's rank-1 modes k of A(B_k(c_k)), for every c.

    CuTe composes mode by mode, so A o B is A(B(.)) exactly when this holds; an injective B is not enough:
    A = (6,2):(0,1), B = (3,2):(2,3) has B(2,1) = 4 + 3 = 7 in A's second column while 4 and 3 are in its first."""
    parts = leaves(b)
    for i in range(b.size):
        rest, total = i, 0
        for leaf in parts:
            total += a(leaf(rest % leaf.size))
            rest //= leaf.size
        if total != a(b(i)):
            return False
    return True


def test_composition_distributes_over_modes_not_function_composition():
    """The counterexample above: CuTe's (and our) composition is (3,2):(0,0) there, which is not A(B(.))."""
    a, b = L((6, 2), (0, 1)), L((3, 2), (2, 3))
    assert injective(b) and not adds_over_modes(a, b)
    r = composition(a, b)
    assert repr(r) == "(3,2):(0,0)" and [a(b(i)) for i in range(6)] == [0, 0, 0, 0, 0, 1]


@PROPS
@given(layouts(), layouts())
def test_composition_is_function_composition(a, b):
    assume(b.cosize <= a.size and adds_over_modes(a, b))  # CuTe composes B mode by mode
    r = admissible(composition, a, b)
    assume(r is not None)
    assert r.size == b.size
    assert [r(i) for i in range(b.size)] == [a(b(i)) for i in range(b.size)]


@PROPS
@given(layouts())
def test_coalesce_keeps_size_and_function(lay):
    c = coalesce(lay)
    assert c.size == lay.size and c.depth <= 1
    np.testing.assert_array_equal(c.offsets(), lay.offsets())


@PROPS
@given(layouts(strides=st.sampled_from([1, 2, 3, 4, 6, 8, 12, 16, 24])), st.integers(1, 4))
def test_complement_completes_an_injective_layout(lay, k):
    assume(injective(lay))
    flat = coalesce(lay)
    extent = max([m.size * m.stride for m in flat.modes if m.size > 1], default=1)   # what L already spans
    r = admissible(complement, lay, k * extent)
    assume(r is not None)
    img_l, img_r = set(lay.offsets().tolist()), set(r.offsets().tolist())
    assert img_l & img_r == {0}                              # disjoint but for offset 0 (both start there)
    assert sorted(make_layout(lay, r).offsets().tolist()) == list(range(k * extent))  # a bijection onto [0, M)
    assert list(r.offsets()) == sorted(r.offsets())          # ordered: increasing offsets


@PROPS
@given(layouts(), layouts(max_rank=2))
def test_logical_divide_mode0_is_the_tile_and_mode1_the_rest(a, b):
    d = admissible(logical_divide, a, b)
    assume(d is not None)
    tile = composition(a, b)
    assert [d[0](i) for i in range(b.size)] == [tile(i) for i in range(b.size)]
    both = admissible(lambda: make_layout(b, complement(b, a.size)))
    if both is not None and sorted(both.offsets().tolist()) == list(range(a.size)):
        # the tiles exactly cover A: the divide is a permutation of A's elements
        assert sorted(d.offsets().tolist()) == sorted(a.offsets().tolist())


@PROPS
@given(st.integers(1, 40), st.integers(1, 40), st.sampled_from([8, 16]), st.sampled_from([8, 16]),
       st.sampled_from([1, 2]), st.sampled_from([1, 2]))
def test_matmul_tiling_partitions_c_like_the_block_formulas(M, N, bm, bn, wm, wn):
    t = matmul_tiling(M, N, bm, bn, wm, wn, thread_shape=(2, 4))
    m, n = np.indices((M, N))
    num_pid_n = -(-N // bn)
    np.testing.assert_array_equal(t.pid_m, m // bm)
    np.testing.assert_array_equal(t.pid_n, n // bn)
    np.testing.assert_array_equal(t.block, (m // bm) * num_pid_n + n // bn)
    wtm, wtn = bm // wm, bn // wn
    np.testing.assert_array_equal(t.warp, ((m % bm) // wtm) * wn + (n % bn) // wtn)
    em, en = wtm // 2, wtn // 4
    np.testing.assert_array_equal(t.thread, ((m % wtm) // em) * 4 + (n % wtn) // en)
    np.testing.assert_array_equal(t.element, (m % em) * en + n % en)


def test_matmul_tiling_counts_and_errors():
    t = matmul_tiling(64, 64, 32, 32, 2, 2, (4, 8))
    assert t.num_programs == 4 and t.warp_shape == (16, 16) and t.elements_per_thread == (4, 2)
    for b in range(4):                                      # every thread of every warp owns 4*2 elements
        counts = np.bincount((t.warp * 32 + t.thread)[t.block == b], minlength=128)
        assert set(counts.tolist()) == {8}
    assert repr(t.layouts["blocks"]) == "((32,32),(2,2)):((1,64),(32,2048))"
    with pytest.raises(ValueError, match="divisible by warps_m"):
        matmul_tiling(64, 64, 32, 32, 2, 2, (32, 1))
    with pytest.raises(ValueError, match="M must be a positive int"):
        matmul_tiling(0, 64, 32, 32)
    fig = tiling_figure(matmul_tiling(20, 24, 16, 16, 2, 2, (2, 4)))
    assert len(fig.data) == 3 and (np.asarray(fig.data[0].z) >= 0).all()
    assert np.asarray(fig.data[2].z).max() == 7
    with pytest.raises(ValueError, match="levels"):
        tiling_figure(t, ("lane",))
