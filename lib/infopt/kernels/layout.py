"""CuTe's layout algebra in pure Python: a layout is a function from coordinates to offsets, `shape:stride`.

A faithful small re-implementation of the algebra of NVIDIA CUTLASS's CuTe ("CuTe Layouts" and "CuTe Layout
Algebra", media/docs/cpp/cute/01_layout.md and 02_layout_algebra.md). NVIDIA's own Python version, pycute
(CUTLASS's python/pycute/layout.py and int_tuple.py, BSD-3-Clause), was the reference for the algorithms and for
the admissibility checks: where pycute asserts (the "stride divisibility" and "shape divisibility" conditions of
`composition`, an overlapping layout in `complement`), this module raises a ValueError that says why, and it
checks coordinates against the shape. Coordinates are colexicographic as in CuTe: the leftmost mode varies
fastest, so an index `i` of `(4,2):(2,1)` is the coordinate `(i % 4, i // 4)`.

`matmul_tiling` uses `zipped_divide` to say which program (block), warp and thread own each element of a matmul's
output C, the partition that CUTLASS writes with these layouts and that Triton's `#blocked` layout encodes
(sizePerThread, threadsPerWarp, warpsPerCTA); `tiling_figure` draws it.
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import Any, Iterable, Sequence, Union

import numpy as np

IntTuple = Union[int, tuple]     # an int or a nested tuple of ints
Tiler = Union["Layout", int, tuple, None]

__all__ = [
    "Layout", "make_layout", "row_major", "col_major", "size", "cosize", "coalesce", "composition", "complement",
    "right_inverse", "logical_divide", "zipped_divide", "tiled_divide", "logical_product", "blocked_product",
    "raked_product", "Divided2D", "divide_2d", "MatmulTiling", "matmul_tiling", "tiling_figure",
]


# ----------------------------------------------------------------------------------------------- int tuples

def _is_int(x: object) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _as_int_tuple(x: object, name: str, minimum: int | None) -> IntTuple:
    """`x` as an int or nested tuple of Python ints (lists accepted), each >= minimum; else a ValueError."""
    if _is_int(x):
        v = int(operator.index(x))
        if minimum is not None and v < minimum:
            raise ValueError(f"{name} entries must be ints >= {minimum}, got {v}")
        return v
    if isinstance(x, (tuple, list)) and len(x) > 0:
        return tuple(_as_int_tuple(v, name, minimum) for v in x)
    raise ValueError(f"{name} must be an int or a non-empty (nested) tuple of ints, got {x!r}")


def _flatten(t: IntTuple) -> tuple[int, ...]:
    return (t,) if _is_int(t) else tuple(v for x in t for v in _flatten(x))


def _product(t: IntTuple) -> int:
    return math.prod(_flatten(t))


def _congruent(a: IntTuple, b: IntTuple) -> bool:
    if _is_int(a) or _is_int(b):
        return _is_int(a) and _is_int(b)
    return len(a) == len(b) and all(_congruent(x, y) for x, y in zip(a, b))


def _depth(t: IntTuple) -> int:
    return 0 if _is_int(t) else 1 + max(_depth(x) for x in t)


def _fmt(t: IntTuple) -> str:
    return str(t) if _is_int(t) else "(" + ",".join(_fmt(x) for x in t) + ")"


def _crd2idx(coord: Any, shape: IntTuple, stride: IntTuple) -> int:
    """Offset of `coord` (an int index, split colexicographically, or a coordinate congruent with the shape at
    each level where it is a tuple)."""
    if isinstance(coord, (tuple, list)):
        if _is_int(shape) or len(coord) != len(shape):
            raise ValueError(f"coordinate {coord!r} does not match shape {_fmt(shape)} (rank "
                             f"{1 if _is_int(shape) else len(shape)})")
        return sum(_crd2idx(c, s, d) for c, s, d in zip(coord, shape, stride))
    if not _is_int(coord):
        raise TypeError(f"a coordinate is an int or a tuple, got {type(coord).__name__}")
    coord = int(coord)
    if not 0 <= coord < _product(shape):
        raise ValueError(f"coordinate entry {coord} is outside [0, {_product(shape)}) of the mode "
                         f"{_fmt(shape)}:{_fmt(stride)}")
    if _is_int(shape):
        return coord * stride
    total = 0
    for i, (s, d) in enumerate(zip(shape, stride)):
        n = _product(s)
        if i == len(shape) - 1:
            total += _crd2idx(coord, s, d)
        else:
            total += _crd2idx(coord % n, s, d)
            coord //= n
    return total


def _positive(v: object, name: str) -> int:
    if not _is_int(v) or int(v) < 1:
        raise ValueError(f"{name} must be a positive int, got {v!r}")
    return int(v)


# ----------------------------------------------------------------------------------------------- Layout

@dataclass(frozen=True)
class Layout:
    """A CuTe layout `shape:stride`: maps a coordinate (or a colexicographic index) to sum(coord_i * stride_i).

    `Layout((4,2), (2,1))` is the 4x2 row-major matrix `(4,2):(2,1)`; without a stride it is column-major
    (CuTe's default, the "compact" layout whose strides are the prefix products of the shape)."""

    shape: IntTuple
    stride: IntTuple = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        shape = _as_int_tuple(self.shape, "shape", 1)
        stride = _compact_col_major(shape) if self.stride is None else _as_int_tuple(self.stride, "stride", None)
        if not _congruent(shape, stride):
            raise ValueError(f"shape {_fmt(shape)} and stride {_fmt(stride)} must have the same nesting "
                             "(congruent int tuples)")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "stride", stride)

    def __call__(self, *coord: Any) -> int:
        """Offset of a coordinate: `L(i)` for an index in [0, size), `L(i, j)` or `L((i, j))` for a coordinate."""
        c = coord[0] if len(coord) == 1 else tuple(coord)
        if _is_int(c) and not 0 <= int(c) < self.size:
            raise ValueError(f"index {int(c)} is outside the domain [0, {self.size}) of {self}")
        return _crd2idx(c, self.shape, self.stride)

    @property
    def size(self) -> int:
        """Size of the domain: the product of the shape."""
        return _product(self.shape)

    @property
    def cosize(self) -> int:
        """Size of the codomain, CuTe's L(size - 1) + 1 (the largest offset plus one for non-negative strides)."""
        return self(self.size - 1) + 1

    @property
    def rank(self) -> int:
        """Number of top-level modes (1 for an integral shape)."""
        return 1 if _is_int(self.shape) else len(self.shape)

    @property
    def depth(self) -> int:
        """Nesting depth: 0 for an integral shape, 1 for a tuple of ints, ..."""
        return _depth(self.shape)

    def __getitem__(self, i: int) -> "Layout":
        """Mode `i` as a layout (`L[0]` of an integral layout is itself)."""
        if _is_int(self.shape):
            if i not in (0, -1):
                raise IndexError(f"{self} has rank 1; mode {i} does not exist")
            return self
        return Layout(self.shape[i], self.stride[i])

    @property
    def modes(self) -> list["Layout"]:
        """The top-level modes as layouts."""
        return [self[i] for i in range(self.rank)]

    def __len__(self) -> int:
        return self.rank

    def __repr__(self) -> str:
        return f"{_fmt(self.shape)}:{_fmt(self.stride)}"

    __str__ = __repr__

    def offsets(self) -> np.ndarray:
        """The offsets L(0), L(1), ..., L(size-1) (colexicographic order) as an int64 vector."""
        out = np.zeros(1, dtype=np.int64)
        for s, d in zip(_flatten(self.shape), _flatten(self.stride)):   # leftmost mode fastest
            out = (out[None, :] + d * np.arange(s, dtype=np.int64)[:, None]).reshape(-1)
        return out

    def to_array(self) -> np.ndarray:
        """Table of offsets: a 1-D vector for rank 1, a (size(mode0), size(mode1)) matrix for rank 2 (element
        [i, j] = L(i, j)), else one axis per top-level mode."""
        dims = [_product(m.shape) for m in self.modes]
        return self.offsets().reshape(dims[::-1]).transpose(range(len(dims) - 1, -1, -1)).copy()


def _compact_col_major(shape: IntTuple, start: int = 1) -> IntTuple:
    if _is_int(shape):
        return start
    out = []
    for s in shape:
        out.append(_compact_col_major(s, start))
        start *= _product(s)
    return tuple(out)


def _compact_row_major(shape: IntTuple, start: int = 1) -> IntTuple:
    if _is_int(shape):
        return start
    out = []
    for s in reversed(shape):          # rightmost mode fastest, at every level
        out.append(_compact_row_major(s, start))
        start *= _product(s)
    return tuple(reversed(out))


def make_layout(*layouts: Layout | Iterable[Layout]) -> Layout:
    """Concatenate layouts: each becomes one mode of the result, `(A, B)` (CuTe's make_layout(A, B))."""
    if len(layouts) == 1 and not isinstance(layouts[0], Layout):
        layouts = tuple(layouts[0])  # type: ignore[arg-type]
    if not layouts or not all(isinstance(x, Layout) for x in layouts):
        raise TypeError("make_layout takes one or more Layouts")
    return Layout(tuple(x.shape for x in layouts), tuple(x.stride for x in layouts))  # type: ignore[union-attr]


def row_major(shape: IntTuple) -> Layout:
    """The compact row-major layout of `shape` (last mode stride 1), e.g. (4,2):(2,1)."""
    shape = _as_int_tuple(shape, "shape", 1)
    return Layout(shape, _compact_row_major(shape))


def col_major(shape: IntTuple) -> Layout:
    """The compact column-major layout of `shape` (first mode stride 1, CuTe's default), e.g. (4,2):(1,4)."""
    return Layout(shape)


def size(x: Layout | IntTuple) -> int:
    """Size of a layout's domain, or the product of an int tuple."""
    return x.size if isinstance(x, Layout) else _product(_as_int_tuple(x, "shape", 0))


def cosize(layout: Layout) -> int:
    """Size of a layout's codomain."""
    return layout.cosize


# ----------------------------------------------------------------------------------------------- coalesce

def coalesce(layout: Layout, profile: IntTuple | None = None) -> Layout:
    """The simplest layout with the same size and the same function on indices: flatten, drop size-1 modes,
    merge s0:d0, s1:s0*d0 into s0*s1:d0. With a tuple `profile`, coalesce each mode separately (by-mode)."""
    if isinstance(profile, tuple):
        if len(profile) > layout.rank:
            raise ValueError(f"profile {profile} has more modes than {layout}")
        return make_layout([coalesce(layout[i], profile[i]) for i in range(len(profile))]
                           + [layout[i] for i in range(len(profile), layout.rank)])
    shapes, strides = [1], [0]
    for s, d in zip(_flatten(layout.shape), _flatten(layout.stride)):
        if s == 1:
            continue
        if shapes[-1] == 1:
            shapes[-1], strides[-1] = s, d
        elif shapes[-1] * strides[-1] == d:
            shapes[-1] *= s
        else:
            shapes.append(s)
            strides.append(d)
    return Layout(shapes[0], strides[0]) if len(shapes) == 1 else Layout(tuple(shapes), tuple(strides))


# ----------------------------------------------------------------------------------------------- composition

def _divides_either(a: int, b: int) -> bool:
    return a % b == 0 or b % a == 0


def _as_tiler_layout(t: Any) -> Layout:
    if isinstance(t, Layout):
        return t
    if _is_int(t):
        return Layout(int(t), 1)
    raise TypeError(f"a tiler is a Layout, an int, a tuple of tilers or None; got {t!r}")


def composition(a: Layout, b: Tiler) -> Layout:
    """A o B: the layout R with R(i) == A(B(i)) for every i in B's domain, shaped like B (CuTe's composition).

    `b` may be a Layout (composed as a 1-D function), an int n (n:1), a tuple of tilers (applied mode by mode:
    mode i of A with b[i]) or None (no-op). Raises ValueError where CuTe's "stride divisibility" condition (B's
    remaining stride and each shape of coalesced A divide one another) or "shape divisibility" condition (each
    strided shape and B's remaining size divide one another) fails, as pycute's shape_div asserts. (Newer C++
    CuTe checks both more weakly: it admits (6,2):(1,7) o 4:1, which is 4:1, but also (4,3):(1,10) o 4:3, whose
    result it gets wrong.) B's modes are composed one by one, which equals A(B(i)) for an injective B (CuTe's
    precondition for left distributivity)."""
    if b is None:
        return a
    if isinstance(b, tuple):
        if len(b) > a.rank:
            raise ValueError(f"the tiler {b!r} has {len(b)} modes but {a} has only {a.rank}")
        return make_layout([composition(a[i], b[i]) for i in range(len(b))]
                           + [a[i] for i in range(len(b), a.rank)])
    b = _as_tiler_layout(b)
    if not _is_int(b.shape):                 # left-distributive over B's modes
        return make_layout([composition(a, m) for m in b.modes])
    s, d = b.shape, b.stride
    if d == 0:
        return Layout(s, 0)
    if d < 0 or any(x < 0 for x in _flatten(a.stride)):
        raise ValueError(f"composition here supports non-negative strides only: {a} o {b}")
    flat = coalesce(a)
    shapes, strides = _flatten(flat.shape), _flatten(flat.stride)
    out_shape: list[int] = []
    out_stride: list[int] = []
    rest_shape, rest_stride = s, d
    for sa, da in zip(shapes[:-1], strides[:-1]):
        # divide out the stride: keep every rest_stride-th element of this mode
        if not _divides_either(sa, rest_stride):
            raise ValueError(
                f"composition {a} o {b} is not defined: stride divisibility condition fails (the mode of size "
                f"{sa} and the remaining stride {rest_stride} of B do not divide one another); pick a B whose "
                f"stride divides or is a multiple of A's shapes")
        new_sa = sa // rest_stride if sa % rest_stride == 0 else 1
        new_da = da * (sa // new_sa)
        rest_stride = rest_stride // sa if rest_stride % sa == 0 else 1
        # mod out the shape: keep the first rest_shape elements
        if not _divides_either(new_sa, rest_shape):
            raise ValueError(
                f"composition {a} o {b} is not defined: shape divisibility condition fails (after dividing out "
                f"the stride, a mode of size {new_sa} and the remaining size {rest_shape} of B do not divide one "
                f"another)")
        keep = min(new_sa, rest_shape)
        out_shape.append(keep)
        out_stride.append(new_da)
        rest_shape = rest_shape // new_sa if rest_shape % new_sa == 0 else 1
    out_shape.append(rest_shape)
    out_stride.append(rest_stride * strides[-1])
    return coalesce(Layout(tuple(out_shape), tuple(out_stride)))


# ----------------------------------------------------------------------------------------------- complement

def complement(layout: Layout, cotarget: IntTuple = 1) -> Layout:
    """The layout R of "the rest": ordered (increasing strides), image disjoint from `layout`'s, and (layout, R)
    covering [0, size(cotarget)) when that is a multiple of the extent `layout` fills. CuTe's complement(A, M).

    Raises ValueError for a layout CuTe cannot complement: one whose sorted modes overlap or whose strides do
    not divide one another (for example a non-injective layout such as (4,2):(1,2))."""
    bound = size(cotarget)
    if any(x < 0 for x in _flatten(layout.stride)):
        raise ValueError(f"complement needs non-negative strides, got {layout}")
    shapes: list[int] = []
    strides: list[int] = []
    current = 1
    for d, s in sorted(zip(_flatten(layout.stride), _flatten(layout.shape))):
        if d == 0 or s == 1:
            continue
        if d % current:
            raise ValueError(
                f"complement of {layout} is not defined: after filling offsets [0, {current}) the mode {s}:{d} "
                f"does not start at a multiple of {current} (its image overlaps the previous modes' or leaves a "
                "hole no ordered layout fills); the layout must be injective with strides that divide")
        shapes.append(d // current)
        strides.append(current)
        current = s * d
    shapes.append(-(-bound // current))
    strides.append(current)
    return coalesce(Layout(tuple(shapes), tuple(strides)))


def right_inverse(layout: Layout) -> Layout:
    """A layout R with layout(R(i)) == i on the largest prefix [0, size(R)) it can invert (CuTe's right_inverse)."""
    flat_shape, flat_stride = _flatten(layout.shape), _flatten(layout.stride)
    rstrides = _flatten(_compact_col_major(tuple(flat_shape))) if len(flat_shape) > 1 else (1,)
    shapes, strides, current = [], [], 1
    for d, s, r in sorted(zip(flat_stride, flat_shape, rstrides)):
        if s == 1:
            continue
        if d != current:
            break
        shapes.append(s)
        strides.append(r)
        current = s * d
    if not shapes:
        return Layout(1, 0)
    return coalesce(Layout(tuple(shapes), tuple(strides)))


# ----------------------------------------------------------------------------------------------- divide / product

def logical_divide(layout: Layout, tiler: Tiler) -> Layout:
    """A / B = A o (B, complement(B, size(A))): mode 0 is the tile B picks, mode 1 iterates over the tiles.

    With a tuple tiler it divides mode by mode (a shape `(4, 8)` is the tiler <4:1, 8:1>), giving
    ((TileM, RestM), (TileN, RestN), ...). When B's size does not divide A's, the last tile runs past A's domain,
    as in CuTe (predicate, or pad the data)."""
    if tiler is None:
        return layout
    if isinstance(tiler, tuple):
        if len(tiler) > layout.rank:
            raise ValueError(f"the tiler {tiler!r} has {len(tiler)} modes but {layout} has only {layout.rank}")
        return make_layout([logical_divide(layout[i], tiler[i]) for i in range(len(tiler))]
                           + [layout[i] for i in range(len(tiler), layout.rank)])
    b = _as_tiler_layout(tiler)
    return composition(layout, make_layout(b, complement(b, layout.size)))


def logical_product(a: Layout, b: Tiler) -> Layout:
    """A x B = (A, complement(A, size(A) * cosize(B)) o B): A repeated in the pattern B (CuTe's logical_product);
    a tuple `b` multiplies mode by mode."""
    if b is None:
        return a
    if isinstance(b, tuple):
        if len(b) > a.rank:
            raise ValueError(f"the tiler {b!r} has {len(b)} modes but {a} has only {a.rank}")
        return make_layout([logical_product(a[i], b[i]) for i in range(len(b))]
                           + [a[i] for i in range(len(b), a.rank)])
    b = _as_tiler_layout(b)
    return make_layout(a, composition(complement(a, a.size * b.cosize), b))


def _hier_unzip(op: Any, a: Layout, tiler: Tiler) -> Layout:
    """((tiles of each mode), (rests of each mode, then the modes the tiler left alone))."""
    if tiler is None:
        return make_layout(Layout(1, 0), a)
    if isinstance(tiler, tuple):
        if len(tiler) > a.rank:
            raise ValueError(f"the tiler {tiler!r} has {len(tiler)} modes but {a} has only {a.rank}")
        split = [_hier_unzip(op, a[i], tiler[i]) for i in range(len(tiler))]
        return make_layout(make_layout([x[0] for x in split]),
                           make_layout([x[1] for x in split] + [a[i] for i in range(len(tiler), a.rank)]))
    return op(a, tiler)


def zipped_divide(layout: Layout, tiler: Tiler) -> Layout:
    """logical_divide with the modes regrouped as ((TileM, TileN, ...), (RestM, RestN, ...)): mode 0 is one tile,
    mode 1 indexes the tiles (so zipped_divide(A, B)[0] == composition(A, B))."""
    return _hier_unzip(logical_divide, layout, tiler)


def tiled_divide(layout: Layout, tiler: Tiler) -> Layout:
    """((TileM, TileN, ...), RestM, RestN, ...)."""
    z = zipped_divide(layout, tiler)
    return make_layout([z[0]] + z[1].modes)


def _append_rank(x: Layout, r: int) -> Layout:
    return x if x.rank >= r else make_layout(x.modes + [Layout(1, 0)] * (r - x.rank))


def blocked_product(block: Layout, tiler: Layout) -> Layout:
    """`block` repeated as contiguous blocks arranged like `tiler`, mode by mode: ((block_m, tiles_m),
    (block_n, tiles_n)), each mode coalesced (CuTe's blocked_product)."""
    r = max(block.rank, tiler.rank)
    p = logical_product(_append_rank(block, r), _append_rank(tiler, r))
    zipped = make_layout([make_layout(p[0][i], p[1][i]) for i in range(r)])
    return coalesce(zipped, (1,) * r)


def raked_product(block: Layout, tiler: Layout) -> Layout:
    """Like blocked_product but interleaved: each mode is (tiles, block), a cyclic distribution (CuTe's)."""
    r = max(block.rank, tiler.rank)
    p = logical_product(_append_rank(block, r), _append_rank(tiler, r))
    zipped = make_layout([make_layout(p[1][i], p[0][i]) for i in range(r)])
    return coalesce(zipped, (1,) * r)


# ----------------------------------------------------------------------------------------------- 2-D tiles

@dataclass(frozen=True)
class Divided2D:
    """A 2-D layout cut into tiles by `logical_divide(layout, tiler)`, as tables over its (row, col) coordinates:
    `offsets[i, j]` = layout(i, j) read through the divided layout, `tile[i, j]` the tile holding (i, j) in
    CuTe's order (tile_row + tiles_m * tile_col, mode 1 of the divide), `within[i, j]` its index in the tile."""

    layout: Layout
    tiler: tuple[int, int]
    divided: Layout
    offsets: np.ndarray
    tile: np.ndarray
    tile_row: np.ndarray
    tile_col: np.ndarray
    within: np.ndarray
    tiles: tuple[int, int]      # tiles along rows and cols (the last ones partial when the tiler does not divide)

    @property
    def divides(self) -> bool:
        """Whether the tiler divides the shape (no partial tiles, nothing for a kernel to mask)."""
        return all(n % t == 0 for n, t in zip(_flatten(self.layout.shape), self.tiler))


def divide_2d(layout: Layout, tiler: tuple[int, int]) -> Divided2D:
    """logical_divide of a rank-2 layout with integral modes by the shape tiler (tile_rows, tile_cols), laid
    back over the layout's coordinates for drawing (coordinates come from dividing the identity n:1 of each mode
    the same way)."""
    if layout.rank != 2 or layout.depth != 1:
        raise ValueError(f"divide_2d wants a rank-2 layout with integral modes, got {layout}")
    if not (isinstance(tiler, (tuple, list)) and len(tiler) == 2):
        raise ValueError(f"tiler must be (tile_rows, tile_cols), got {tiler!r}")
    tr, tc = (_positive(v, "tile sizes") for v in tiler)
    divided = logical_divide(layout, (tr, tc))                        # ((tr, nr), (tc, nc))
    rows, cols = layout.shape
    coords = [logical_divide(Layout(n, 1), t) for n, t in ((rows, tr), (cols, tc))]
    nr, nc = (-(-rows // tr), -(-cols // tc))
    div_off = np.zeros((tr, nr, tc, nc), dtype=np.int64)
    for (a, ti, b, tj) in np.ndindex(tr, nr, tc, nc):
        div_off[a, ti, b, tj] = divided((a, ti), (b, tj))
    out = {k: np.zeros((rows, cols), dtype=np.int64) for k in ("offsets", "tile", "tile_row", "tile_col", "within")}
    for (a, ti, b, tj) in np.ndindex(tr, nr, tc, nc):
        i, j = coords[0]((a, ti)), coords[1]((b, tj))
        if i >= rows or j >= cols:
            continue                                                   # past the edge: a partial tile
        out["offsets"][i, j] = div_off[a, ti, b, tj]
        out["tile"][i, j], out["tile_row"][i, j], out["tile_col"][i, j] = ti + nr * tj, ti, tj
        out["within"][i, j] = a + tr * b
    return Divided2D(layout, (tr, tc), divided, out["offsets"], out["tile"], out["tile_row"], out["tile_col"],
                     out["within"], (nr, nc))


# ----------------------------------------------------------------------------------------------- matmul tiling

@dataclass(frozen=True)
class MatmulTiling:
    """Who owns each element of an M x N matmul output: arrays [M, N] of the program (block) id in Triton's
    row-major pid order, the block's (pid_m, pid_n), the warp in the block and the lane in the warp, plus the
    element's index among its thread's `elements_per_thread`. `layouts` keeps the zipped_divide results."""

    M: int
    N: int
    block: np.ndarray
    pid_m: np.ndarray
    pid_n: np.ndarray
    warp: np.ndarray
    thread: np.ndarray
    element: np.ndarray
    block_shape: tuple[int, int]
    warp_shape: tuple[int, int]           # the tile one warp owns
    thread_shape: tuple[int, int]         # threads per warp, (rows, cols)
    elements_per_thread: tuple[int, int]  # the sub-tile one thread owns
    layouts: dict

    @property
    def num_programs(self) -> int:
        """Programs (blocks) in the launch grid: cdiv(M, block_m) * cdiv(N, block_n)."""
        return int(self.block.max()) + 1


def matmul_tiling(M: int, N: int, block_m: int, block_n: int, warps_m: int = 2, warps_n: int = 2,
                  thread_shape: tuple[int, int] = (4, 8)) -> MatmulTiling:
    """Partition C [M, N] into blocks (one Triton program each), each block into warps_m x warps_n warp tiles and
    each warp tile into thread_shape threads that own a contiguous sub-tile each (a #blocked layout).

    Every level is a `zipped_divide` of the level above, starting from the column-major layout of C padded to
    whole blocks; elements past M or N (the ones a kernel masks off) are left out. Requires block_m divisible by
    warps_m * thread_shape[0] and block_n by warps_n * thread_shape[1]."""
    M, N = _positive(M, "M"), _positive(N, "N")
    bm, bn = _positive(block_m, "block_m"), _positive(block_n, "block_n")
    wm, wn = _positive(warps_m, "warps_m"), _positive(warps_n, "warps_n")
    if not (isinstance(thread_shape, (tuple, list)) and len(thread_shape) == 2):
        raise ValueError(f"thread_shape must be (rows, cols) of threads in a warp, got {thread_shape!r}")
    tm, tn = (_positive(v, "thread_shape entries") for v in thread_shape)
    for blk, w, t, axis in ((bm, wm, tm, "m"), (bn, wn, tn, "n")):
        if blk % (w * t):
            raise ValueError(f"block_{axis}={blk} must be divisible by warps_{axis} * threads along {axis} = "
                             f"{w} * {t} = {w * t} (each thread owns a whole sub-tile)")
    warp_tile = (bm // wm, bn // wn)
    per_thread = (warp_tile[0] // tm, warp_tile[1] // tn)
    Mp, Np = -(-M // bm) * bm, -(-N // bn) * bn
    c = col_major((Mp, Np))                              # offset = m + Mp * n
    blocks = zipped_divide(c, (bm, bn))                  # ((bm, bn), (blocks_m, blocks_n))
    warps = zipped_divide(blocks[0], warp_tile)          # ((warp_m, warp_n), (warps_m, warps_n))
    threads = zipped_divide(warps[0], per_thread)        # ((elems_m, elems_n), (threads_m, threads_n))
    levels = [blocks[1].to_array(), warps[1].to_array(), threads[1].to_array(), threads[0].to_array()]
    dims = tuple(d for a in levels for d in a.shape)          # (blocks_m, blocks_n, wm, wn, tm, tn, em, en)
    off = sum(a.reshape([1] * (2 * k) + list(a.shape) + [1] * (6 - 2 * k)) for k, a in enumerate(levels))
    off = np.broadcast_to(off, dims).reshape(-1)
    idx = np.indices(dims).reshape(8, -1)
    nbn = dims[1]
    shape = (Mp, Np)
    out = {}
    for name, value in (("block", idx[0] * nbn + idx[1]), ("pid_m", idx[0]), ("pid_n", idx[1]),
                        ("warp", idx[2] * wn + idx[3]), ("thread", idx[4] * tn + idx[5]),
                        ("element", idx[6] * per_thread[1] + idx[7])):
        grid = np.full(Mp * Np, -1, dtype=np.int64)
        grid[off] = value                                     # offset m + Mp * n: column-major
        out[name] = grid.reshape(Np, Mp).T
    cut = {k: v[:M, :N].copy() for k, v in out.items()}
    return MatmulTiling(M, N, cut["block"], cut["pid_m"], cut["pid_n"], cut["warp"], cut["thread"],
                        cut["element"], (bm, bn), warp_tile, (tm, tn), per_thread,
                        {"C": c, "blocks": blocks, "warps": warps, "threads": threads})


def tiling_figure(tiling: MatmulTiling, levels: Sequence[str] = ("block", "warp", "thread")) -> Any:
    """A plotly Figure with one heatmap per level of `tiling` (block, warp, thread, element): each C element
    coloured and labelled by the block / warp / lane that owns it."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    names = {"block": "program (block) id", "warp": "warp in its block", "thread": "lane in its warp",
             "element": "element in its thread"}
    for lv in levels:
        if lv not in names:
            raise ValueError(f"levels must be among {list(names)}, got {lv!r}")
    fig = make_subplots(rows=1, cols=len(levels), subplot_titles=[names[lv] for lv in levels],
                        horizontal_spacing=0.04)
    for k, lv in enumerate(levels, start=1):
        z = getattr(tiling, lv)
        fig.add_trace(go.Heatmap(z=z, text=z.astype(str), texttemplate="%{text}" if z.size <= 1024 else None,
                                 colorscale="Turbo", showscale=False, xgap=1, ygap=1,
                                 hovertemplate="C[%{y}, %{x}]: " + lv + " %{z}<extra></extra>"), row=1, col=k)
        fig.update_yaxes(autorange="reversed", title_text="m" if k == 1 else None, row=1, col=k)
        fig.update_xaxes(title_text="n", row=1, col=k)
    bm, bn = tiling.block_shape
    fig.update_layout(
        title=dict(text=f"C {tiling.M}x{tiling.N}: blocks {bm}x{bn}, warp tiles {tiling.warp_shape[0]}x"
                        f"{tiling.warp_shape[1]}, {tiling.thread_shape[0]}x{tiling.thread_shape[1]} threads per "
                        f"warp owning {tiling.elements_per_thread[0]}x{tiling.elements_per_thread[1]} each",
                   font=dict(size=12)),
        height=360, width=max(420, 330 * len(levels)), margin=dict(l=40, r=10, t=70, b=40))
    return fig
