"""The KV cache (infopt.llm.kv_cache): attend_with_cache against naive attention, in-place writes, overflow, the
contiguous cache's logits against the uncached model's, and its bytes against the formula."""
from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from infopt.llm.kv_cache import ContiguousKVCache, attend_with_cache, kv_bytes_per_token  # noqa: E402
from infopt.llm.model import DRAFT_CONFIG, TARGET_CONFIG, TinyLlama  # noqa: E402

torch.set_num_threads(1)


def naive_attention(q, k, v, q_positions):
    """Per query head, per query: softmax over keys 0..position of that query (GQA by h // group), written as loops."""
    hq, t, d = q.shape
    g = hq // k.shape[0]
    out = torch.zeros_like(q)
    for h in range(hq):
        for i in range(t):
            p = q_positions[i]
            w = torch.softmax(k[h // g, :p + 1] @ q[h, i] / math.sqrt(d), dim=0)
            out[h, i] = w @ v[h // g, :p + 1]
    return out


@pytest.mark.parametrize("hq,hkv,pos,t", [(4, 2, 0, 5), (4, 2, 7, 1), (6, 3, 3, 4), (2, 1, 10, 6)])
def test_attend_with_cache_equals_naive_attention_over_the_full_sequence(hq, hkv, pos, t):
    d, max_len = 8, 16
    gen = torch.Generator().manual_seed(pos * 31 + t)
    full_k, full_v = torch.randn(hkv, pos + t, d, generator=gen), torch.randn(hkv, pos + t, d, generator=gen)
    q = torch.randn(hq, t, d, generator=gen)
    k_cache = torch.full((hkv, max_len, d), float("nan"))
    v_cache = torch.full((hkv, max_len, d), float("nan"))
    k_cache[:, :pos], v_cache[:, :pos] = full_k[:, :pos], full_v[:, :pos]
    keep = k_cache.data_ptr()
    out = attend_with_cache(q, full_k[:, pos:], full_v[:, pos:], k_cache, v_cache, pos)
    torch.testing.assert_close(out, naive_attention(q, full_k, full_v, list(range(pos, pos + t))))
    assert k_cache.data_ptr() == keep                              # written in place, not replaced
    torch.testing.assert_close(k_cache[:, :pos + t], full_k)
    torch.testing.assert_close(v_cache[:, :pos + t], full_v)
    assert torch.isnan(k_cache[:, pos + t:]).all()                 # nothing written past the new tokens


def test_attend_with_cache_raises_on_overflow_and_bad_shapes():
    q, k, cache = torch.randn(2, 3, 4), torch.randn(1, 3, 4), torch.zeros(1, 8, 4)
    with pytest.raises(ValueError, match="max_len=8"):
        attend_with_cache(q, k, k, cache, cache.clone(), 6)
    with pytest.raises(ValueError, match="k_new"):
        attend_with_cache(q, torch.randn(1, 2, 4), torch.randn(1, 2, 4), cache, cache.clone(), 0)
    with pytest.raises(ValueError, match="multiple"):
        attend_with_cache(torch.randn(3, 3, 4), torch.randn(2, 3, 4), torch.randn(2, 3, 4), torch.zeros(2, 8, 4),
                          torch.zeros(2, 8, 4), 0)


@pytest.mark.parametrize("config", [TARGET_CONFIG, DRAFT_CONFIG], ids=["target", "draft"])
def test_cached_logits_equal_uncached_logits(config):
    model = TinyLlama(config, seed=5).eval()
    tokens = torch.randint(0, 256, (2, 19), generator=torch.Generator().manual_seed(1))
    positions = torch.arange(19).expand(2, 19)
    with torch.no_grad():
        full = model(tokens)
        cache = ContiguousKVCache(config, max_seqs=3, max_len=24)
        parts = [model(tokens[:, :7], positions[:, :7], cache=cache, seq_ids=[4, 9])]
        parts.append(model(tokens[:, 7:10], positions[:, 7:10], cache=cache, seq_ids=[4, 9]))   # a chunk
        for t in range(10, 19):
            parts.append(model(tokens[:, t:t + 1], positions[:, t:t + 1], cache=cache, seq_ids=[4, 9]))
    torch.testing.assert_close(torch.cat(parts, 1), full, atol=1e-5, rtol=1e-5)
    assert cache.length(4) == cache.length(9) == 19


def test_sequences_of_different_lengths_share_a_batch():
    model = TinyLlama(DRAFT_CONFIG, seed=2).eval()
    a, b = torch.randint(0, 256, (1, 9)), torch.randint(0, 256, (1, 4))
    with torch.no_grad():
        cache = ContiguousKVCache(DRAFT_CONFIG, max_seqs=2, max_len=16)
        model(a[:, :8], torch.arange(8)[None], cache=cache, seq_ids=[0])
        model(b[:, :3], torch.arange(3)[None], cache=cache, seq_ids=[1])
        step = model(torch.tensor([[a[0, 8]], [b[0, 3]]]), torch.tensor([[8], [3]]), cache=cache, seq_ids=[0, 1])
        torch.testing.assert_close(step[0, 0], model(a)[0, -1], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(step[1, 0], model(b)[0, -1], atol=1e-5, rtol=1e-5)
    cache.free(0)
    assert cache.length(0) == 0 and cache.length(1) == 4
    with pytest.raises(KeyError):
        cache.free(0)


def test_kv_bytes_per_token_equals_what_the_contiguous_cache_holds():
    for config in (TARGET_CONFIG, DRAFT_CONFIG):
        for dtype, nbytes in ((torch.float32, 4), (torch.float16, 2)):
            cache = ContiguousKVCache(config, max_seqs=3, max_len=10, dtype=dtype)
            assert cache.bytes_reserved() == 3 * 10 * kv_bytes_per_token(config, nbytes)
            q = torch.zeros(1, config.n_heads, 1, config.head_dim)
            kv = torch.zeros(1, config.n_kv_heads, 1, config.head_dim)
            for layer in range(config.n_layers):
                cache.attend(layer, [0], torch.tensor([[0]]), q, kv, kv)
            assert cache.bytes_used() == kv_bytes_per_token(config, nbytes)
            assert kv_bytes_per_token(config, nbytes) == 2 * config.n_layers * config.n_kv_heads * config.head_dim \
                * nbytes
