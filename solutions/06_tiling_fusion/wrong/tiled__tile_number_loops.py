def tiled_matmul_kernel(M: int, N: int, K: int, ti: int, tj: int) -> Kernel:
    """C = A @ B tiled by (ti, tj), the outer loops counting tile numbers (step 1) instead of stepping by ti, tj."""
    A, B, C = Buffer("A", (M, K)), Buffer("B", (K, N)), Buffer("C", (M, N), role="out")
    ti_n, tj_n, ii, ji, k = (Var(v) for v in ("ti_n", "tj_n", "ii", "ji", "k"))
    inner = loop("ii", ti_n * ti, minimum(ti_n * ti + ti, M), body=loop("ji", tj_n * tj, minimum(tj_n * tj + tj, N), body=[
        Store(C, (ii, ji), 0.0),
        loop("k", K, body=Store(C, (ii, ji), C[ii, ji] + A[ii, k] * B[k, ji]))]))
    nest = loop("ti_n", 0, -(-M // ti), body=loop("tj_n", 0, -(-N // tj), body=inner))
    return Kernel(f"mm_tiled_{M}x{N}x{K}_{ti}x{tj}", (A, B, C), (nest,))
