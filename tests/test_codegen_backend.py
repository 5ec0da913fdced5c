"""The llvmlite backend: emitted IR runs and matches numpy; pass pipelines; cache; errors; parallel loops."""
import numpy as np
import pytest

from infopt.codegen import Assign, Buffer, Cast, If, Kernel, KernelError, Store, Var, call, cmp, loop, maximum, select
from infopt.codegen.compiled import compile_kernel
from infopt.codegen.emit import emit_llvm
from infopt.codegen.llvm_jit import LLVMError, cache_info, emit_asm, has_target, host_info, jit, optimize, parse_ir

rng = np.random.default_rng()


def _matmul(n, m, k, kind="serial"):
    A, B, C = Buffer("A", (n, k)), Buffer("B", (k, m)), Buffer("C", (n, m), role="out")
    i, j, p, acc = Var("i"), Var("j"), Var("p"), Var("acc", "f32")
    body = [loop(i, n, kind=kind, body=[loop(j, m, body=[
        Assign(acc, 0.0), loop(p, k, body=[Assign(acc, acc + A[i, p] * B[p, j])]), Store(C, (i, j), acc)])])]
    return Kernel(f"mm_{kind}", (A, B, C), body)


@pytest.mark.parametrize("opt", [0, 1, 3])
def test_matmul_matches_numpy_at_every_level(opt):
    n, m, k = (int(v) for v in rng.integers(3, 20, 3))
    a, b = rng.standard_normal((n, k), dtype=np.float32), rng.standard_normal((k, m), dtype=np.float32)
    (c,) = compile_kernel(_matmul(n, m, k), opt=opt).run(a, b)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_parallel_loop_split_across_threads():
    n = 37
    a, b = rng.standard_normal((n, 9), dtype=np.float32), rng.standard_normal((9, 11), dtype=np.float32)
    ck = compile_kernel(_matmul(n, 11, 9, "parallel"))
    c = np.zeros((n, 11), np.float32)
    ck(a, b, c, threads=2)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_unroll_vectorize_if_cast_and_math():
    n = 64
    X, Y = Buffer("X", (n,)), Buffer("Y", (n,), role="out")
    io, ii = Var("io"), Var("ii")
    idx = io * 4 + ii
    x = Buffer("X", (n,))[idx]
    val = select(cmp(">", x, 0.0), call("sqrt", x), call("exp", x) - 1.0) + Cast("f32", Cast("i32", x * 3.0))
    k = Kernel("mix", (X, Y), [loop(io, n // 4, kind="vectorize", width=4, body=[
        loop(ii, 4, kind="unroll", body=[If(cmp("<", idx, n), [Store(Y, (idx,), val)])])])])
    ir = emit_llvm(k)
    assert "llvm.loop.vectorize.enable" in ir and "distinct" in ir
    xs = rng.standard_normal(n, dtype=np.float32) * 3
    (y,) = compile_kernel(k).run(xs)
    ref = np.where(xs > 0, np.sqrt(np.abs(xs)), np.expm1(xs)) + np.trunc(xs * 3)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


def test_named_passes_and_levels_change_the_ir():
    ir = emit_llvm(_matmul(4, 4, 4))
    assert "alloca" in ir
    promoted = optimize(ir, passes=["mem2reg", "instcombine", "simplifycfg"])
    assert "alloca" not in promoted and "phi" in promoted
    with pytest.raises(ValueError, match="unknown pass 'nope'"):
        optimize(ir, passes=["nope"])
    with pytest.raises(ValueError, match="opt must be"):
        optimize(ir, opt=7)


def test_call_checks_arrays():
    ck = compile_kernel(_matmul(3, 4, 5))
    a, b, c = np.zeros((3, 5), np.float32), np.zeros((5, 4), np.float32), np.zeros((3, 4), np.float32)
    with pytest.raises(ValueError, match="argument A must be f32\\[3, 5\\], got float64"):
        ck(a.astype(np.float64), b, c)
    with pytest.raises(ValueError, match="C-contiguous"):
        ck(np.zeros((5, 3), np.float32).T, b, c)
    with pytest.raises(TypeError, match="takes 3 arrays"):
        ck(a, b)


def test_cache_by_ir_text_makes_recompiling_free():
    k = _matmul(5, 6, 7)
    compile_kernel(k)
    before = cache_info()["modules"]
    compile_kernel(_matmul(5, 6, 7))
    assert cache_info()["modules"] == before


def test_llvm_errors_quote_the_offending_line():
    bad = "define void @f() {\nentry:\n  %x = fadd float 1.0, %nope\n  ret void\n}\n"
    with pytest.raises(LLVMError, match="IR line 3: %x = fadd float 1.0, %nope"):
        parse_ir(bad)
    undominated = "define float @g(float %a) {\nentry:\n  %y = fadd float %z, %a\n  %z = fadd float %a, %a\n  ret float %y\n}\n"
    with pytest.raises(LLVMError, match="verifier"):
        parse_ir(undominated)


def test_verifier_runs_before_llvm():
    X = Buffer("X", (4,))
    with pytest.raises(KernelError, match="out of bounds"):
        compile_kernel(Kernel("k", (X, Buffer("Y", (4,), role="out")), [Store(Buffer("Y", (4,), role="out"), (4,), X[0])]))


def test_host_info_asm_and_ptx():
    h = host_info()
    assert h.cpu and h.triple.startswith(("x86_64", "aarch64"))
    ir = emit_llvm(_matmul(2, 2, 2))
    assert "mm_serial" in emit_asm(optimize(ir))
    if has_target("nvptx64-nvidia-cuda"):
        ptx = emit_asm(ir.replace('target triple = "unknown-unknown-unknown"', ""), "nvptx64-nvidia-cuda", "sm_80")
        assert ".target sm_80" in ptx


def test_jit_plain_ir_function():
    ir = "define double @twice(double %x) {\n  %y = fmul double %x, 2.0\n  ret double %y\n}\n"
    import ctypes

    f = jit(ir).cfunc("twice", ctypes.c_double, ctypes.c_double)
    v = float(rng.standard_normal())
    assert f(v) == 2 * v


def test_temp_buffers_are_allocated_per_call_and_per_thread():
    n, m = 12, 16
    X, T, Y = Buffer("X", (n, m)), Buffer("T", (m,), role="temp"), Buffer("Y", (n, m), role="out")
    i, j = Var("i"), Var("j")
    k = Kernel("via_temp", (X, T, Y), [loop(i, n, kind="parallel", body=[
        loop(j, m, body=[Store(T, (j,), X[i, j] * 2.0)]),
        loop(j, m, body=[Store(Y, (i, j), T[m - 1 - j] + 1.0)])])])
    ck = compile_kernel(k)
    x = rng.standard_normal((n, m), dtype=np.float32)
    for threads in (1, 2):
        y = np.zeros((n, m), np.float32)
        ck(x, y, threads=threads)
        np.testing.assert_allclose(y, x[:, ::-1] * 2 + 1, rtol=1e-6)
