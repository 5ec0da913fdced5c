"""The tiny Llama (infopt.llm.model) and its tokenizer: shapes, the GQA head mapping, RoPE, causality, seeded init."""
from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from infopt.llm.model import (  # noqa: E402
    DRAFT_CONFIG, TARGET_CONFIG, TinyConfig, TinyLlama, apply_rope, grouped_attention, rms_norm, rope_cos_sin,
)
from infopt.llm.tokenizer import BOS, EOS, PAD, VOCAB_SIZE, ByteTokenizer  # noqa: E402

torch.set_num_threads(1)


def test_tokenizer_round_trips_and_skips_specials():
    tok = ByteTokenizer()
    text = "def f(x):\n    return 'héllo ✓'\n"
    ids = tok.encode(text)
    assert ids[0] == BOS and all(0 <= i < 256 for i in ids[1:])
    assert tok.decode(ids + [EOS, PAD]) == text
    assert tok.encode("a", bos=False) == [97]
    assert tok.decode([0xE2, 0x9C]) == "\ufffd"          # a cut multi-byte character is replaced, not an error
    assert VOCAB_SIZE == 259
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tok.decode([VOCAB_SIZE])


def test_configs_match_the_plan():
    assert (TARGET_CONFIG.dim, TARGET_CONFIG.n_layers, TARGET_CONFIG.n_heads, TARGET_CONFIG.n_kv_heads,
            TARGET_CONFIG.head_dim, TARGET_CONFIG.ffn_dim) == (128, 4, 4, 2, 32, 352)
    assert (DRAFT_CONFIG.dim, DRAFT_CONFIG.n_layers, DRAFT_CONFIG.n_heads, DRAFT_CONFIG.n_kv_heads,
            DRAFT_CONFIG.head_dim, DRAFT_CONFIG.ffn_dim) == (64, 2, 2, 1, 32, 176)
    with pytest.raises(ValueError, match="multiple of n_kv_heads"):
        TinyConfig(dim=64, n_layers=1, n_heads=3, n_kv_heads=2, head_dim=32, ffn_dim=64)


def test_rms_norm_formula():
    x = torch.randn(3, 5, 16)
    w = torch.randn(16)
    want = w * x / torch.sqrt((x ** 2).mean(-1, keepdim=True) + 1e-5)
    torch.testing.assert_close(rms_norm(x, w, 1e-5), want)


def test_rope_rotates_pairs_first_half_with_second_half():
    d, theta = 8, 10000.0
    pos = torch.tensor([[0, 3, 7]])
    cos, sin = rope_cos_sin(pos, d, theta)
    x = torch.randn(1, 2, 3, d)
    out = apply_rope(x, cos, sin)
    for t, p in enumerate([0, 3, 7]):
        for i in range(d // 2):
            ang = p * theta ** (-2 * i / d)
            a, b = x[..., t, i], x[..., t, i + d // 2]
            torch.testing.assert_close(out[..., t, i], a * math.cos(ang) - b * math.sin(ang))
            torch.testing.assert_close(out[..., t, i + d // 2], b * math.cos(ang) + a * math.sin(ang))
    # a rotation: dot products depend only on the distance between positions
    q = torch.randn(1, 1, 1, d).expand(1, 1, 2, d)
    c1, s1 = rope_cos_sin(torch.tensor([[2, 5]]), d, theta)
    c2, s2 = rope_cos_sin(torch.tensor([[12, 15]]), d, theta)
    r1, r2 = apply_rope(q, c1, s1), apply_rope(q, c2, s2)
    torch.testing.assert_close((r1[..., 0, :] * r1[..., 1, :]).sum(), (r2[..., 0, :] * r2[..., 1, :]).sum())


def test_grouped_attention_maps_heads_as_hf_repeat_kv():
    from transformers.models.llama.modeling_llama import repeat_kv
    b, hq, hkv, t, s, d = 2, 6, 2, 3, 5, 4
    q, k, v = torch.randn(b, hq, t, d), torch.randn(b, hkv, s, d), torch.randn(b, hkv, s, d)
    mask = torch.rand(b, t, s) > 0.3
    mask[..., 0] = True
    out = grouped_attention(q, k, v, mask)
    kk, vv = repeat_kv(k, hq // hkv), repeat_kv(v, hq // hkv)
    scores = (q @ kk.transpose(-1, -2)) / math.sqrt(d)
    scores = scores.masked_fill(~mask[:, None], float("-inf"))
    torch.testing.assert_close(out, torch.softmax(scores, -1) @ vv)
    with pytest.raises(ValueError, match="mask"):
        grouped_attention(q, k, v, mask[:, :, :-1])


def test_seeded_init_and_causality():
    a, b = TinyLlama(DRAFT_CONFIG, seed=3), TinyLlama(DRAFT_CONFIG, seed=3)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    assert not torch.equal(a.lm_head.weight, TinyLlama(DRAFT_CONFIG, seed=4).lm_head.weight)
    tokens = torch.randint(0, 256, (2, 10))
    with torch.no_grad():
        logits = a(tokens)
        changed = tokens.clone()
        changed[:, 6:] = (changed[:, 6:] + 1) % 256
        later = a(changed)
    assert logits.shape == (2, 10, VOCAB_SIZE) and logits.dtype == torch.float32
    torch.testing.assert_close(logits[:, :6], later[:, :6])      # the future does not leak into the past
    assert not torch.allclose(logits[:, 6:], later[:, 6:])
    assert a.hidden(tokens).shape == (2, 10, DRAFT_CONFIG.dim)
    assert a.num_parameters() == sum(p.numel() for p in a.parameters()) > 0


def test_bad_input_is_named():
    m = TinyLlama(DRAFT_CONFIG)
    with pytest.raises(ValueError, match=r"\[B, T\]"):
        m(torch.zeros(5, dtype=torch.long))
    with pytest.raises(ValueError, match="max_seq_len"):
        m(torch.zeros(1, 1, dtype=torch.long), torch.tensor([[DRAFT_CONFIG.max_seq_len]]))
    with pytest.raises(TypeError, match="TinyConfig"):
        TinyLlama({"dim": 4})
