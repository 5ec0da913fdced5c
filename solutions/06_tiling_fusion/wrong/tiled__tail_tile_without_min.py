def tiled_matmul_kernel(M: int, N: int, K: int, ti: int, tj: int) -> Kernel:
    """C = A @ B tiled by (ti, tj), every tile run to its full size: the last tile reaches past the matrix."""
    A, B, C = Buffer("A", (M, K)), Buffer("B", (K, N)), Buffer("C", (M, N), role="out")
    io, jo, ii, ji, k = (Var(v) for v in ("io", "jo", "ii", "ji", "k"))
    inner = loop("ii", io, io + ti, body=loop("ji", jo, jo + tj, body=[
        Store(C, (ii, ji), 0.0),
        loop("k", K, body=Store(C, (ii, ji), C[ii, ji] + A[ii, k] * B[k, ji]))]))
    nest = loop("io", 0, M, step=ti, body=loop("jo", 0, N, step=tj, body=inner))
    return Kernel(f"mm_tiled_{M}x{N}x{K}_{ti}x{tj}", (A, B, C), (nest,))
