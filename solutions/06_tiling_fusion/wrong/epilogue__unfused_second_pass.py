from infopt.codegen import Assign


def matmul_bias_relu_kernel(M: int, N: int, K: int) -> Kernel:
    """C = A @ B in one nest, then bias + ReLU in a second pass over C (correct values, twice the C traffic)."""
    A, B, bias, C = Buffer("A", (M, K)), Buffer("B", (K, N)), Buffer("bias", (N,)), Buffer("C", (M, N), role="out")
    i, j, k, p, q, acc = Var("i"), Var("j"), Var("k"), Var("p"), Var("q"), Var("acc", "f32")
    mm = loop("i", M, body=loop("j", N, body=[
        Assign(acc, 0.0),
        loop("k", K, body=Assign(acc, acc + A[i, k] * B[k, j])),
        Store(C, (i, j), acc)]))
    epi = loop("p", M, body=loop("q", N, body=Store(C, (p, q), maximum(C[p, q] + bias[q], 0.0))))
    return Kernel("mm_bias_relu_unfused", (A, B, bias, C), (mm, epi))
