"""infopt.kernels.matmul: the plain matmul_kernel (exercise 3's reference) and the grouped kernel with its fused
epilogue, in Triton's interpreter against float64 torch on odd sizes, transposed (strided) operands and half
dtypes; grouped_pid against its Python twin grouped_order; l2_reuse's tile counts; error messages."""
from __future__ import annotations

import inspect

import pytest

torch = pytest.importorskip("torch")

from infopt.kernels.backend import cdiv, interpreted, tl, triton  # noqa: E402
from infopt.kernels.matmul import (  # noqa: E402
    grouped_order, grouped_pid, l2_reuse, matmul, matmul_kernel, matmul_reference, min_traffic, row_major_order,
)

torch.set_num_threads(1)


def assert_close(got: torch.Tensor, want: torch.Tensor, rtol: float) -> None:
    """|got - want| <= rtol * (|want| + the output's typical size): a relative test that is fair near zero."""
    assert got.shape == want.shape, f"shape {tuple(got.shape)}, expected {tuple(want.shape)}"
    err = (got.double() - want).abs()
    bound = rtol * (want.abs() + want.abs().mean())
    assert (err <= bound).all(), f"max abs error {err.max().item():.3g} (rtol {rtol})"


def operands(M: int, N: int, K: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(M, K, generator=g), torch.randn(K, N, generator=g)


def test_signature_is_the_exercise_one() -> None:
    assert list(inspect.signature(matmul_kernel.fn).parameters) == [
        "a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm",
        "stride_cn", "BLOCK_M", "BLOCK_N", "BLOCK_K"]


@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("size", [(37, 45, 53), (1, 17, 16)])
def test_odd_sizes(grouped: bool, size: tuple[int, int, int]) -> None:
    a, b = operands(*size, seed=sum(size))
    c = matmul(a, b, grouped=grouped)
    assert c.dtype == torch.float32 and c.is_contiguous()
    assert_close(c, matmul_reference(a, b), 1e-5)


@pytest.mark.parametrize("grouped", [False, True])
def test_transposed_operands_use_strides(grouped: bool) -> None:
    a, b = operands(37, 45, 53, seed=1)
    bt = b.t().contiguous().t()            # same values, column-major: stride_bk = 1
    at = a.t().contiguous().t()
    assert bt.stride() == (1, 53) and at.stride() == (1, 37)
    assert_close(matmul(at, bt, grouped=grouped), matmul_reference(a, b), 1e-5)
    wide = torch.randn(37, 70)
    assert_close(matmul(wide[:, 5:58], b, grouped=grouped), matmul_reference(wide[:, 5:58], b), 1e-5)


def test_direct_launch_with_strided_output() -> None:
    a, b = operands(20, 24, 40, seed=2)
    buf = torch.full((24, 30), float("nan"))
    c = buf[:, 3:23].t()                    # C [20, 24] stored column-major inside a NaN buffer
    interpreted(matmul_kernel)[(1 * 2,)](a, b, c, 20, 24, 40, *a.stride(), *b.stride(), *c.stride(),
                                         BLOCK_M=32, BLOCK_N=16, BLOCK_K=16)
    assert_close(c, matmul_reference(a, b), 1e-5)
    assert buf[:, :3].isnan().all() and buf[:, 23:].isnan().all(), "wrote outside C"


@pytest.mark.parametrize("dtype,rtol", [(torch.float16, 2e-3), (torch.bfloat16, 1.6e-2)])
def test_half_inputs_against_float64(dtype: torch.dtype, rtol: float) -> None:
    a, b = operands(37, 45, 53, seed=3)
    a, b = a.to(dtype), b.to(dtype)         # the reference multiplies the SAME rounded inputs in float64
    c = matmul(a, b)
    assert c.dtype == dtype
    assert_close(c, matmul_reference(a, b), rtol)   # fp32 accumulation + one rounding to the output dtype


@pytest.mark.parametrize("activation", [None, "relu", "gelu", "silu"])
def test_fused_bias_and_activation(activation: str | None) -> None:
    a, b = operands(33, 40, 20, seed=4)
    bias = torch.randn(40)
    c = matmul(a, b, bias=bias, activation=activation, block=(16, 32, 16), group_m=2)
    assert_close(c, matmul_reference(a, b, bias, activation), 1e-5)
    if activation == "relu":
        assert (c >= 0).all() and (c == 0).any()


def test_activation_without_bias_and_huge_negatives() -> None:
    a, b = operands(16, 16, 16, seed=5)
    c = matmul(a * 100, b, activation="silu")
    assert not c.isnan().any()
    assert_close(c, matmul_reference(a * 100, b, activation="silu"), 1e-5)


@triton.jit
def _pid_probe(m_ptr, n_ptr, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    pid_m, pid_n = grouped_pid(pid, num_pid_m, num_pid_n, GROUP_M)
    tl.store(m_ptr + pid, pid_m)
    tl.store(n_ptr + pid, pid_n)


@pytest.mark.parametrize("shape", [(5, 3, 2), (4, 4, 4), (3, 5, 8)])
def test_grouped_pid_matches_its_python_twin(shape: tuple[int, int, int]) -> None:
    num_m, num_n, group = shape
    pm, pn = torch.full((num_m * num_n,), -1, dtype=torch.int32), torch.full((num_m * num_n,), -1, dtype=torch.int32)
    interpreted(_pid_probe)[(num_m * num_n,)](pm, pn, num_m, num_n, GROUP_M=group)
    assert list(zip(pm.tolist(), pn.tolist())) == grouped_order(num_m, num_n, group)


@pytest.mark.parametrize("shape", [(1, 1, 1), (5, 3, 2), (7, 4, 3), (4, 9, 8)])
def test_grouped_order_is_a_permutation(shape: tuple[int, int, int]) -> None:
    num_m, num_n, group = shape
    order = grouped_order(num_m, num_n, group)
    assert sorted(order) == [(m, n) for m in range(num_m) for n in range(num_n)]


def test_grouped_order_special_cases() -> None:
    assert grouped_order(3, 4, 1) == row_major_order(3, 4)                    # a group of one row is row-major
    assert grouped_order(3, 2, 3) == [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1)]   # one group: column-major
    assert grouped_order(3, 2, 2) == [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (2, 1)]   # last group is short


def test_l2_reuse_counts() -> None:
    r = l2_reuse(8, 8, group_m=4, cache_tiles=8)
    # row-major: each tile row loads its A tile and all 8 B tiles again (LRU of 8 thrashes on 9): 8 x 9 = 72;
    # grouped by 4: each group loads its 4 A tiles and the 8 B tiles once: 2 x 12 = 24
    assert (r["row_major"], r["grouped"], r["minimum"]) == (72, 24, 16)
    assert r["saved"] == pytest.approx(1 - 24 / 72)
    big = l2_reuse(8, 8, group_m=4, cache_tiles=64)                          # everything fits: each tile once
    assert big["row_major"] == big["grouped"] == big["minimum"] == 16
    deep = l2_reuse(16, 16, group_m=4, cache_tiles=32, num_pid_k=2)
    assert deep["grouped"] < deep["row_major"]


def test_bad_inputs_raise_clear_errors() -> None:
    a, b = operands(8, 8, 8, seed=0)
    with pytest.raises(ValueError, match="must equal"):
        matmul(a, b[:5])
    with pytest.raises(ValueError, match="2-D"):
        matmul(a[0], b)
    with pytest.raises(TypeError, match="match"):
        matmul(a, b.half())
    with pytest.raises(TypeError, match="dtype"):
        matmul(a.int(), b.int())
    with pytest.raises(ValueError, match="activation"):
        matmul(a, b, activation="tanh")
    with pytest.raises(ValueError, match=r"bias must have shape \(8,\)"):
        matmul(a, b, bias=torch.zeros(7))
    with pytest.raises(ValueError, match=">= 16"):
        matmul(a, b, block=(8, 16, 16))
    with pytest.raises(ValueError, match="no epilogue"):
        matmul(a, b, bias=torch.zeros(8), grouped=False)
    with pytest.raises(ValueError, match="group_m"):
        grouped_order(2, 2, 0)
    with pytest.raises(ValueError, match="fp32_precision"):
        matmul(a, b, fp32_precision="fp16")


def test_min_traffic() -> None:
    assert min_traffic(2, 3, 4) == {"a_ptr": 8, "b_ptr": 12, "c_ptr": 6}
    assert min_traffic(2, 3, 4, bias=True)["bias_ptr"] == 3


def test_plain_kernel_reads_each_operand_once_per_tile_of_the_other() -> None:
    from infopt.kernels.trace import run_traced

    (M, N, K), (bm, bn, bk) = (37, 45, 53), (32, 16, 16)
    a, b = operands(M, N, K, seed=8)
    c = torch.full((M, N), float("nan"))
    grid = (cdiv(M, bm) * cdiv(N, bn),)
    log = run_traced(matmul_kernel, grid, a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(),
                     BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk)
    # masks keep every access in bounds; A is re-read by each of the cdiv(N, bn) = 3 column tiles, B by 2 row tiles
    assert log.reads("a_ptr") == M * K * cdiv(N, bn) and log.reads("b_ptr") == K * N * cdiv(M, bm)
    assert log.writes("c_ptr") == M * N and log.never_written("c_ptr").size == 0
    assert_close(c, matmul_reference(a, b), 1e-5)

