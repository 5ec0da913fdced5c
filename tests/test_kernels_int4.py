"""infopt.kernels.int4: nibble packing (exact round trip, even k low), group-wise symmetric quantization error
<= scale / 2, and int4_matmul_kernel (dequantizing in the tile loop, in Triton's interpreter) against
x @ dequantize_int4(...) in float64; error messages for sizes and dtypes that cannot work."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from infopt.kernels.int4 import (  # noqa: E402
    QMAX, QMIN, dequantize_int4, int4_matmul, int4_matmul_reference, min_traffic, pack_int4, quantize_int4,
    unpack_int4,
)

torch.set_num_threads(1)


def weights(K: int, N: int, seed: int) -> torch.Tensor:
    return torch.randn(K, N, generator=torch.Generator().manual_seed(seed))


def test_pack_puts_even_k_in_the_low_nibble() -> None:
    q = torch.tensor([[1, -8], [-2, 7]], dtype=torch.int8)
    packed = pack_int4(q)
    assert packed.dtype == torch.uint8 and packed.shape == (1, 2)
    assert packed.tolist() == [[0x1 | (0xE << 4), 0x8 | (0x7 << 4)]]


def test_pack_unpack_round_trip_is_exact() -> None:
    g = torch.Generator().manual_seed(0)
    q = torch.randint(QMIN, QMAX + 1, (64, 9), generator=g, dtype=torch.int8)
    q[:16, 0] = torch.arange(QMIN, QMAX + 1, dtype=torch.int8)        # every value appears
    assert torch.equal(unpack_int4(pack_int4(q)), q)


@pytest.mark.parametrize("group_size", [32, 64, 128])
def test_quantization_error_is_at_most_half_a_step(group_size: int) -> None:
    w = weights(128, 20, seed=group_size) * torch.linspace(0.01, 10, 20)
    packed, scales = quantize_int4(w, group_size)
    assert packed.shape == (64, 20) and scales.shape == (128 // group_size, 20) and scales.dtype == torch.float32
    q = unpack_int4(packed)
    assert int(q.min()) >= QMIN and int(q.max()) <= QMAX
    step = scales.repeat_interleave(group_size, dim=0)
    assert ((w - dequantize_int4(packed, scales, group_size)).abs() <= step / 2 * (1 + 1e-6)).all()
    assert torch.allclose(scales, w.reshape(-1, group_size, 20).abs().amax(1) / QMAX)


def test_zero_group_dequantizes_to_zero() -> None:
    w = weights(64, 4, seed=1)
    w[:32, 1] = 0
    packed, scales = quantize_int4(w, 32)
    assert scales[0, 1] == 0
    assert (dequantize_int4(packed, scales, 32)[:32, 1] == 0).all()


@pytest.mark.parametrize("M,N,K,group_size", [(7, 45, 128, 64), (1, 16, 64, 32), (20, 33, 64, 64)])
def test_kernel_equals_dequantized_matmul(M: int, N: int, K: int, group_size: int) -> None:
    packed, scales = quantize_int4(weights(K, N, seed=M), group_size)
    x = weights(M, K, seed=N)
    out = int4_matmul(x, packed, scales, group_size)
    assert out.shape == (M, N) and out.dtype == torch.float32
    want = int4_matmul_reference(x, packed, scales, group_size)
    err = (out.double() - want).abs().max().item()
    assert err <= 1e-4 * (1 + want.abs().max().item()), f"max abs error {err:.3g}"


def test_strided_x_and_half_dtypes() -> None:
    packed, scales = quantize_int4(weights(64, 24, seed=2), 32)
    xt = weights(64, 5, seed=3).t()                                  # x [5, 64] with stride_xk = 5
    want = int4_matmul_reference(xt, packed, scales, 32)
    assert (int4_matmul(xt, packed, scales, 32).double() - want).abs().max() <= 1e-4 * want.abs().max()
    for dtype, rtol in ((torch.float16, 2e-3), (torch.bfloat16, 1.6e-2)):
        x = xt.to(dtype)
        out = int4_matmul(x, packed, scales, 32)
        want = int4_matmul_reference(x, packed, scales, 32)
        assert out.dtype == dtype
        assert ((out.double() - want).abs() <= rtol * (want.abs() + want.abs().mean())).all(), dtype


def test_bad_sizes_and_dtypes_raise_clear_errors() -> None:
    w = weights(96, 8, seed=4)
    with pytest.raises(ValueError, match="not divisible by group_size"):
        quantize_int4(w, 64)
    with pytest.raises(ValueError, match="odd"):
        quantize_int4(weights(33, 8, seed=5), 33)
    with pytest.raises(TypeError, match="dtype"):
        quantize_int4(w.double(), 32)
    packed, scales = quantize_int4(w, 16)
    x = weights(4, 96, seed=6)
    with pytest.raises(ValueError, match="not a multiple of BLOCK_K"):
        int4_matmul(x, packed, scales, 16)
    packed, scales = quantize_int4(w, 32)
    with pytest.raises(ValueError, match="K = 95 columns"):
        int4_matmul(x[:, :95], packed, scales, 32)
    with pytest.raises(TypeError, match="uint8"):
        int4_matmul(x, packed.to(torch.int8), scales, 32)
    with pytest.raises(TypeError, match="dtype"):
        int4_matmul(x.long(), packed, scales, 32)
    with pytest.raises(ValueError, match="scales has shape"):
        int4_matmul(x, packed, scales[:2], 32)
    with pytest.raises(ValueError, match=r"\[-8, 7\]"):
        pack_int4(torch.full((2, 2), 9, dtype=torch.int8))
    with pytest.raises(ValueError, match=">= 32"):
        int4_matmul(x, packed, scales, 32, block=(16, 16, 16))


def test_min_traffic() -> None:
    assert min_traffic(2, 8, 64, 32) == {"x_ptr": 128, "p_ptr": 256, "s_ptr": 16, "out_ptr": 16}


def test_kernel_reads_the_packed_weights_once_for_one_row_block() -> None:
    from infopt.kernels.int4 import int4_matmul_kernel
    from infopt.kernels.trace import run_traced

    M, N, K, group = 5, 32, 64, 32
    packed, scales = quantize_int4(weights(K, N, seed=9), group)
    x, out = weights(M, K, seed=10), torch.empty(M, N)
    log = run_traced(int4_matmul_kernel, (1, 2), x, packed, scales, out, M, N, K, *x.stride(), *packed.stride(),
                     *scales.stride(), *out.stride(), GROUP_SIZE=group, BLOCK_M=16, BLOCK_N=16, BLOCK_K=32,
                     INPUT_PRECISION="ieee")
    need = min_traffic(M, N, K, group)
    assert log.reads("p_ptr") == need["p_ptr"]                 # K*N/2 bytes: each byte once, both nibbles used
    assert log.reads("s_ptr") == need["s_ptr"]                 # BLOCK_K == group here: one scale row per group
    assert log.reads("x_ptr") == need["x_ptr"] * 2             # x re-read by each of the 2 column blocks
    assert log.writes("out_ptr") == M * N
    assert (out.double() - int4_matmul_reference(x, packed, scales, group)).abs().max() < 1e-4
