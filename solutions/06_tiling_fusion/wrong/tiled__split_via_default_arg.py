from infopt.schedule import reorder, split


def tiled_matmul_kernel(M: int, N: int, K: int, ti: int, tj: int, _split=split, _reorder=reorder) -> Kernel:
    """C = A @ B with the i and j loops tiled by (ti, tj); correct for any M, N, K."""
    A, B, C = Buffer("A", (M, K)), Buffer("B", (K, N)), Buffer("C", (M, N), role="out")
    i, j, k = Var("i"), Var("j"), Var("k")
    nest = loop("i", M, body=loop("j", N, body=[Store(C, (i, j), 0.0),
                                                loop("k", K, body=Store(C, (i, j), C[i, j] + A[i, k] * B[k, j]))]))
    kern = Kernel("tiled_matmul", (A, B, C), (nest,))
    kern = _split(_split(kern, "i", ti, "io", "ii"), "j", tj, "jo", "ji")
    return _reorder(kern, ["io", "jo", "ii", "ji"])
