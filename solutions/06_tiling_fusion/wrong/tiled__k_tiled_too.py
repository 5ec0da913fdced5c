def tiled_matmul_kernel(M: int, N: int, K: int, ti: int, tj: int) -> Kernel:
    """C = A @ B tiled in i and j, and k cut into blocks of 4 outside the rows and columns of the tile."""
    A, B, C = Buffer("A", (M, K)), Buffer("B", (K, N)), Buffer("C", (M, N), role="out")
    io, jo, ko, ii, ji, k = (Var(v) for v in ("io", "jo", "ko", "ii", "ji", "k"))
    zero = loop("ii", io, minimum(io + ti, M), body=loop("ji", jo, minimum(jo + tj, N), body=Store(C, (ii, ji), 0.0)))
    acc = loop("ko", 0, K, step=4, body=loop("ii", io, minimum(io + ti, M), body=loop("ji", jo, minimum(jo + tj, N),
               body=loop("k", ko, minimum(ko + 4, K), body=Store(C, (ii, ji), C[ii, ji] + A[ii, k] * B[k, ji])))))
    nest = loop("io", 0, M, step=ti, body=loop("jo", 0, N, step=tj, body=[zero, acc]))
    return Kernel(f"mm_tiled_{M}x{N}x{K}_{ti}x{tj}", (A, B, C), (nest,))
