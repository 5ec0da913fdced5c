from infopt.codegen import Assign, Cast


def matmul_bias_relu_kernel(M: int, N: int, K: int) -> Kernel:
    """C = relu(A @ B + bias) fused, with the dot product accumulated in a double (f64) for "more precision"."""
    A, B, bias, C = Buffer("A", (M, K)), Buffer("B", (K, N)), Buffer("bias", (N,)), Buffer("C", (M, N), role="out")
    i, j, k, acc = Var("i"), Var("j"), Var("k"), Var("acc", "f64")
    body = loop("i", M, body=loop("j", N, body=[
        Assign(acc, 0.0),
        loop("k", K, body=Assign(acc, acc + Cast("f64", A[i, k]) * Cast("f64", B[k, j]))),
        Store(C, (i, j), maximum(Cast("f32", acc) + bias[j], 0.0))]))
    return Kernel("mm_bias_relu_fused", (A, B, bias, C), (body,))
