def tiled_matmul_kernel(M: int, N: int, K: int, ti: int, tj: int) -> Kernel:
    """C = A @ B with split i and j loops, but nested io > ii > jo > ji: rows are finished one by one, not tiles."""
    A, B, C = Buffer("A", (M, K)), Buffer("B", (K, N)), Buffer("C", (M, N), role="out")
    io, jo, ii, ji, k = (Var(v) for v in ("io", "jo", "ii", "ji", "k"))
    cols = loop("jo", 0, N, step=tj, body=loop("ji", jo, minimum(jo + tj, N), body=[
        Store(C, (ii, ji), 0.0),
        loop("k", K, body=Store(C, (ii, ji), C[ii, ji] + A[ii, k] * B[k, ji]))]))
    nest = loop("io", 0, M, step=ti, body=loop("ii", io, minimum(io + ti, M), body=cols))
    return Kernel(f"mm_tiled_{M}x{N}x{K}_{ti}x{tj}", (A, B, C), (nest,))
