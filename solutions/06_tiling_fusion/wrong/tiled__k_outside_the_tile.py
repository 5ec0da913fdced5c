def tiled_matmul_kernel(M: int, N: int, K: int, ti: int, tj: int) -> Kernel:
    """C = A @ B tiled by (ti, tj): the tile is zeroed, then k runs outside the rows and columns of the tile."""
    A, B, C = Buffer("A", (M, K)), Buffer("B", (K, N)), Buffer("C", (M, N), role="out")
    io, jo, ii, ji, zi, zj, k = (Var(v) for v in ("io", "jo", "ii", "ji", "zi", "zj", "k"))
    zero = loop("zi", io, minimum(io + ti, M), body=loop("zj", jo, minimum(jo + tj, N), body=Store(C, (zi, zj), 0.0)))
    acc = loop("k", K, body=loop("ii", io, minimum(io + ti, M), body=loop("ji", jo, minimum(jo + tj, N), body=
               Store(C, (ii, ji), C[ii, ji] + A[ii, k] * B[k, ji]))))
    nest = loop("io", 0, M, step=ti, body=loop("jo", 0, N, step=tj, body=[zero, acc]))
    return Kernel(f"mm_tiled_{M}x{N}x{K}_{ti}x{tj}", (A, B, C), (nest,))
