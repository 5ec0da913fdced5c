"""Flash attention (infopt.kernels.attention): online_softmax_update against a direct softmax, the Triton kernel in
the interpreter against a float64 reference and torch's scaled_dot_product_attention (odd S, causal, fp16), and its
counted memory traffic: q read once, o written once, k and v once per query block (half as many blocks causal)."""
from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("infopt.kernels.backend")  # before triton itself: it sets TRITON_INTERPRET

from infopt.kernels.attention import (  # noqa: E402
    attention_min_reads, attention_reference, flash_attention, flash_attention_kernel, flash_attention_launch,
    online_softmax_update,
)
from infopt.kernels.backend import cdiv  # noqa: E402

torch.set_num_threads(1)


def qkv(shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=g).to(dtype) for _ in range(3)]


def max_err(got: torch.Tensor, want: torch.Tensor) -> float:
    return (got.to(torch.float64) - want.to(torch.float64)).abs().max().item()


# --- online_softmax_update (exercise 4's reference) ----------------------------------------------------------------
@pytest.mark.parametrize("causal", [False, True])
def test_online_softmax_block_by_block_equals_a_direct_softmax(causal):
    g = torch.Generator().manual_seed(1)
    r, c_total, d, block = 7, 23, 5, 4
    scores = torch.randn(r, c_total, generator=g, dtype=torch.float64) * 3
    if causal:
        scores = scores.masked_fill(torch.ones(r, c_total, dtype=torch.bool).triu(1), float("-inf"))
    v = torch.randn(c_total, d, generator=g, dtype=torch.float64)
    m = torch.full((r,), float("-inf"), dtype=torch.float64)
    l = torch.zeros(r, dtype=torch.float64)
    acc = torch.zeros(r, d, dtype=torch.float64)
    for j in range(0, c_total, block):  # blocks of 4 keys: later ones are all -inf for the first rows (causal)
        m, l, acc = online_softmax_update(m, l, acc, scores[:, j:j + block], v[j:j + block])
    want = torch.softmax(scores, dim=1) @ v
    assert max_err(acc / l[:, None], want) < 1e-12
    assert torch.allclose(m, scores.max(dim=1).values)
    assert torch.allclose(l, torch.exp(scores - m[:, None]).sum(dim=1))


def test_online_softmax_all_minus_inf_rows_stay_zero_without_nan():
    m = torch.full((3,), float("-inf"))
    l, acc = torch.zeros(3), torch.zeros(3, 2)
    scores = torch.full((3, 4), float("-inf"))
    scores[2] = torch.tensor([0.0, 1.0, float("-inf"), 2.0])  # one row gets keys
    v = torch.arange(8, dtype=torch.float32).reshape(4, 2)
    m2, l2, acc2 = online_softmax_update(m, l, acc, scores, v)
    assert not torch.isnan(m2).any() and not torch.isnan(l2).any() and not torch.isnan(acc2).any()
    assert torch.isneginf(m2[:2]).all() and (l2[:2] == 0).all() and (acc2[:2] == 0).all()
    p = torch.softmax(scores[2], dim=0)
    assert torch.allclose(acc2[2] / l2[2], p @ v)
    # a later block with keys for row 0 then gives it exactly that block's softmax
    later = torch.tensor([[1.0, 2.0], [float("-inf")] * 2, [0.0, 0.0]])
    m3, l3, acc3 = online_softmax_update(m2, l2, acc2, later, v[:2])
    assert torch.allclose(acc3[0] / l3[0], torch.softmax(later[0], 0) @ v[:2]) and (l3[1] == 0)


def test_online_softmax_rejects_shape_mismatches():
    m, l, acc = torch.zeros(3), torch.zeros(3), torch.zeros(3, 2)
    with pytest.raises(ValueError, match="shapes disagree"):
        online_softmax_update(m, l, acc, torch.zeros(3, 4), torch.zeros(5, 2))
    with pytest.raises(ValueError, match="shapes disagree"):
        online_softmax_update(torch.zeros(2), l, acc, torch.zeros(3, 4), torch.zeros(4, 2))
    with pytest.raises(ValueError, match=r"scores \[R, C\]"):
        online_softmax_update(m, l, acc, torch.zeros(3), torch.zeros(4, 2))
    with pytest.raises(TypeError, match="torch.Tensor"):
        online_softmax_update(m, l, acc, [[0.0]], torch.zeros(1, 2))


# --- the kernel's values -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("S", [1, 37, 64, 100])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("D", [16, 64])
def test_flash_attention_matches_the_float64_reference(S, causal, D):
    q, k, v = qkv((1, 2, S, D), seed=S + D)
    got = flash_attention(q, k, v, causal=causal)
    assert got.shape == q.shape and got.dtype == torch.float32
    assert max_err(got, attention_reference(q, k, v, causal)) < 1e-4


def test_flash_attention_d128_and_uneven_blocks():
    q, k, v = qkv((1, 1, 23, 128), seed=5)
    assert max_err(flash_attention(q, k, v, causal=True), attention_reference(q, k, v, True)) < 1e-4
    q, k, v = qkv((2, 1, 45, 32), seed=6)  # block_n smaller than block_m: several key blocks per diagonal
    assert max_err(flash_attention(q, k, v, True, block_m=32, block_n=16), attention_reference(q, k, v, True)) < 1e-4
    assert max_err(flash_attention(q, k, v, False, block_m=16, block_n=64), attention_reference(q, k, v)) < 1e-4


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_fp16_and_torch_sdpa(causal):
    q, k, v = qkv((2, 2, 37, 32), dtype=torch.float16, seed=7)
    got = flash_attention(q, k, v, causal=causal)
    assert got.dtype == torch.float16
    assert max_err(got, attention_reference(q, k, v, causal)) < 1e-2
    q32, k32, v32 = (t.float() for t in (q, k, v))
    sdpa = torch.nn.functional.scaled_dot_product_attention(q32, k32, v32, is_causal=causal)
    assert max_err(flash_attention(q32, k32, v32, causal=causal), sdpa) < 1e-4


def test_causal_means_query_i_ignores_keys_after_i():
    q, k, v = qkv((1, 1, 40, 16), seed=8)
    base = flash_attention(q, k, v, causal=True)
    k2, v2 = k.clone(), v.clone()
    k2[:, :, 20:] = 1e4  # changing keys 20.. must not move queries 0..19
    v2[:, :, 20:] = -1e4
    moved = flash_attention(q, k2, v2, causal=True)
    assert torch.equal(moved[:, :, :20], base[:, :, :20])
    assert not torch.allclose(moved[:, :, 20:], base[:, :, 20:])


def test_flash_attention_rejects_bad_inputs():
    q, k, v = qkv((1, 1, 8, 16))
    with pytest.raises(ValueError, match=r"\[B, H, S, D\]"):
        flash_attention(q, k[:, :, :4], v)
    with pytest.raises(ValueError, match="head dim D must be one of"):
        flash_attention(*qkv((1, 1, 8, 24)))
    with pytest.raises(ValueError, match="contiguous"):
        qt = torch.randn(1, 1, 16, 8).transpose(2, 3)
        flash_attention(qt, qt.contiguous(), qt.contiguous())
    with pytest.raises(TypeError, match="share a dtype"):
        flash_attention(q, k.half(), v)
    with pytest.raises(TypeError, match="fp16, bf16 or fp32"):
        flash_attention(q.double(), k.double(), v.double())
    with pytest.raises(ValueError, match="power of two >= 16"):
        flash_attention(q, k, v, block_m=24)


# --- counted traffic -----------------------------------------------------------------------------------------------
def traced(S, D, causal, block_m=32, block_n=32, B=1, H=2):
    from infopt.kernels.trace import run_traced

    q, k, v = qkv((B, H, S, D), seed=S)
    o = torch.full_like(q, float("nan"))
    grid, args, meta = flash_attention_launch(q, k, v, o, causal, block_m, block_n)
    log = run_traced(flash_attention_kernel, grid, *args, **meta)
    assert max_err(o, attention_reference(q, k, v, causal)) < 1e-4
    return log


@pytest.mark.parametrize("S", [64, 100])
def test_flash_attention_reads_q_once_and_k_v_once_per_query_block(S):
    D, bh = 16, 2
    log = traced(S, D, causal=False)
    assert log.programs == cdiv(S, 32) * bh
    assert log.reads("q_ptr") == S * D * bh == log.distinct_reads("q_ptr")
    assert log.writes("o_ptr") == S * D * bh and log.never_written("o_ptr").size == 0
    for name in ("k_ptr", "v_ptr"):
        assert log.reads(name) == cdiv(S, 32) * S * D * bh  # O(S*D) per query block, no S x S anywhere
        assert log.writes(name) == 0
    want = attention_min_reads(S, D, 32, batch_heads=bh)
    assert (log.reads("q_ptr"), log.reads("k_ptr"), log.reads("v_ptr")) == (want["q"], want["k"], want["v"])


def test_causal_flash_attention_skips_the_key_blocks_above_the_diagonal():
    S, D = 128, 16
    full, causal = traced(S, D, causal=False), traced(S, D, causal=True)
    want = attention_min_reads(S, D, 32, causal=True, batch_heads=2)
    assert causal.reads("k_ptr") == want["k"] == 2 * D * 32 * (1 + 2 + 3 + 4)
    assert causal.reads("v_ptr") == want["v"]
    assert causal.reads("q_ptr") == full.reads("q_ptr") == S * D * 2
    ratio = causal.reads("k_ptr") / full.reads("k_ptr")
    assert ratio == pytest.approx((1 + 2 + 3 + 4) / 16)  # -> 1/2 as S / BLOCK_M grows


def test_attention_min_reads_checks_its_arguments():
    assert attention_min_reads(100, 16, 32) == {"q": 1600, "k": 4 * 100 * 16, "v": 4 * 100 * 16}
    assert attention_min_reads(100, 16, 32, causal=True)["k"] == (32 + 64 + 96 + 100) * 16
    with pytest.raises(ValueError, match="block_m must be an int >= 1"):
        attention_min_reads(10, 16, 0)


def test_attention_reference_is_the_softmax_formula():
    q, k, v = qkv((2, 3, 5, 4), seed=9)
    scores = q.double() @ k.double().transpose(-1, -2) / math.sqrt(4)
    mask = torch.ones(5, 5, dtype=torch.bool).tril()
    want = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1) @ v.double()
    assert torch.allclose(attention_reference(q, k, v, causal=True), want)


def test_flash_attention_runs_the_kernel_it_is_given():
    from infopt.kernels.backend import tl, triton

    @triton.jit
    def copy_q_kernel(q_ptr, k_ptr, v_ptr, o_ptr, stride_qh, stride_qs, stride_kh, stride_ks, stride_vh, stride_vs,
                      stride_oh, stride_os, S, scale, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      CAUSAL: tl.constexpr):
        rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
        offs = tl.program_id(1) * stride_qh + rows[:, None] * stride_qs + tl.arange(0, D)[None, :]
        tl.store(o_ptr + offs, tl.load(q_ptr + offs, mask=rows[:, None] < S), mask=rows[:, None] < S)

    q, k, v = qkv((1, 2, 37, 16), seed=10)
    assert torch.equal(flash_attention(q, k, v, kernel=copy_q_kernel), q)  # a student's kernel, same launch
