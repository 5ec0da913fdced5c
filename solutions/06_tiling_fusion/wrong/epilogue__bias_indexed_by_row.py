from infopt.codegen import Assign


def matmul_bias_relu_kernel(M: int, N: int, K: int) -> Kernel:
    """C = relu(A @ B + bias) fused, but the bias is read at the row index: wrong values, out of bounds when M > N."""
    A, B, bias, C = Buffer("A", (M, K)), Buffer("B", (K, N)), Buffer("bias", (N,)), Buffer("C", (M, N), role="out")
    i, j, k, acc = Var("i"), Var("j"), Var("k"), Var("acc", "f32")
    body = loop("i", M, body=loop("j", N, body=[
        Assign(acc, 0.0),
        loop("k", K, body=Assign(acc, acc + A[i, k] * B[k, j])),
        Store(C, (i, j), maximum(acc + bias[i], 0.0))]))
    return Kernel("mm_bias_relu_fused", (A, B, bias, C), (body,))
