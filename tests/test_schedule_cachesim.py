"""The address trace and the LRU cache simulator: checked against a brute-force reference and known miss counts."""
import numpy as np
import pytest

from infopt.codegen import Buffer, Kernel, Store, Var, loop
from infopt.schedule.address_trace import TraceTooLong, trace_kernel
from infopt.schedule.cachesim import CacheLevel, kernel_misses, simulate
from infopt.schedule.matmul_ladder import interchanged, naive, tiled, tiled_order
from infopt.schedule.traffic import chain_bytes, intensity, matmul_traffic

rng = np.random.default_rng()


def _reference_lru(addrs, size, assoc, line):
    """A slow, obviously-correct LRU: per set, a list ordered oldest -> newest."""
    nsets = size // (assoc * line)
    sets = [[] for _ in range(nsets)]
    misses = 0
    for a in addrs:
        ln = a // line
        s = sets[ln % nsets]
        if ln in s:
            s.remove(ln)
        else:
            misses += 1
            if len(s) == assoc:
                s.pop(0)
        s.append(ln)
    return misses


@pytest.mark.parametrize("assoc", [1, 2, 4])
def test_simulator_matches_reference_on_random_traces(assoc):
    addrs = rng.integers(0, 8192, 3000) * 4
    lvl = CacheLevel("L1", 1024, assoc, 32)
    st = simulate(addrs, [lvl])
    assert st.misses("L1") == _reference_lru(addrs.tolist(), 1024, assoc, 32)


def test_sequential_scan_misses_once_per_line_and_second_level_sees_misses():
    n = int(rng.integers(100, 2000))
    addrs = np.arange(n) * 4
    st = simulate(addrs, [CacheLevel("L1", 512, 2, 64), CacheLevel("L2", 4096, 4, 64)])
    assert st.misses("L1") == -(-n * 4 // 64)
    assert st.levels[1].accesses == st.misses("L1")


def test_trace_counts_every_access_in_order():
    M, N, K = (int(v) for v in rng.integers(2, 9, 3))
    tr = trace_kernel(naive(M, N, K))
    # zero pass: M*N stores; nest: per (i,j,k) loads C, A, B then stores C
    assert len(tr) == M * N + 4 * M * N * K
    assert tr.writes.sum() == M * N + M * N * K
    first_nest = tr.buffer_ids[M * N:M * N + 4]
    assert [tr.buffers[b] for b in first_nest] == ["C", "A", "B", "C"]


def test_trace_too_long_is_a_clear_error():
    with pytest.raises(TraceTooLong, match="smaller sizes"):
        trace_kernel(naive(40, 40, 40), max_accesses=1000)


def test_interchange_and_tiling_reduce_l1_misses():
    n = 32
    levels = [CacheLevel("L1", 2048, 4, 64), CacheLevel("L2", 8192, 8, 64)]
    m_naive = kernel_misses(naive(n, n, n), levels).misses("L1")
    m_ikj = kernel_misses(interchanged(n, n, n), levels).misses("L1")
    m_tiled = kernel_misses(tiled(n, n, n, (32, 32, 32), (8, 16, 8)), levels).misses("L1")
    assert m_ikj < m_naive / 4
    assert m_tiled < m_ikj


def test_writeback_counts_dirty_lines():
    n = 64
    X = Buffer("X", (n,), role="out")
    i = Var("i")
    st = kernel_misses(Kernel("fill", (X,), (loop("i", n, body=Store(X, (i,), 1.0)),)), [CacheLevel("L1", 1024, 2, 64)])
    assert st.writebacks == n * 4 // 64 and st.memory_bytes == 2 * n * 4


def test_bad_cache_geometry_is_rejected():
    with pytest.raises(ValueError, match="power of two"):
        CacheLevel("L1", 1024, 2, 48)
    with pytest.raises(ValueError, match="multiple"):
        CacheLevel("L1", 1000, 2, 64)


def test_traffic_model_orders_the_ladder():
    cache = 32 * 1024  # an L1: a column of B (n lines) does not fit
    for n in (512, 1024, 2048):
        t = {s: matmul_traffic(s, n, cache) for s in ("naive", "interchanged", "tiled", "packed")}
        assert t["naive"] > t["interchanged"] >= t["tiled"], t
        assert intensity("packed", n, cache) > intensity("naive", n, cache)
    assert chain_bytes(1000, 4, fused=True) * 4 == chain_bytes(1000, 4, fused=False)


def test_misses_by_buffer_add_up():
    st = kernel_misses(naive(16, 40, 48))  # a column of B (48 lines) overflows the 2 KiB L1
    assert st.by_buffer is not None and sum(st.by_buffer.values()) == st.misses("L1")
    assert st.by_buffer["B"] >= st.by_buffer["A"]


def test_touch_windows_cover_every_element_by_the_end():
    n = int(rng.integers(5, 12))
    k = tiled_order(n, n, n, (4, 4, 4), "ijk")
    z = trace_kernel(k).touch_windows({"A": (n, n), "B": (n, n), "C": (n, n)}, windows=10)
    for name, arr in z.items():
        assert arr.shape == (10, n, n)
        assert (arr[-1] > 0).all(), f"every element of {name} is touched by the end"
        assert set(np.unique(arr)) <= {0, 1, 2}


def test_first_window_of_a_tiled_nest_touches_only_the_first_tile_of_c():
    n, t = 12, 4
    k = tiled_order(n, n, n, (t, t, n), "ijk")
    tr = trace_kernel(k)
    z = tr.touch_windows({"C": (n, n)}, windows=40)["C"]
    edges = np.linspace(0, len(tr), 41).astype(int)
    f = int(np.searchsorted(edges, n * n, side="right"))  # the first window after the pass that zeroes C
    now = z[f] == 2
    assert now.any() and not now[t:, :].any() and not now[:, t:].any()
    assert (z[f] >= 1).all(), "the zeroing pass touched all of C before"
