"""infopt.llm.memory: the KV-cache formula (Exercise 6's reference), the real models' data, what fits, the figure,
and the formula checked against the bytes the tiny model's caches really allocate."""
import subprocess
import sys
from dataclasses import replace

import pytest

from infopt.llm import memory
from infopt.llm.memory import DTYPE_BYTES, GPUS, MODELS, ModelSpec, kv_cache_bytes, max_context, weight_bytes


def layer_by_layer_kv(spec: ModelSpec, context: int, dtype: str, batch: int = 1) -> float:
    """An independent count: walk the layers; with sliding windows, Gemma 3's pattern (layer i is global when
    i % 6 == 5, the other five of every six are local)."""
    b = DTYPE_BYTES[dtype]
    if spec.attention == "mla":
        return sum((spec.kv_lora_rank + spec.qk_rope_head_dim) * b * context for _ in range(spec.n_layers)) * batch
    is_global = [not spec.local_layers or i % 6 == 5 for i in range(spec.n_layers)]
    assert spec.n_layers - sum(is_global) == spec.local_layers
    return batch * sum(2 * spec.n_kv_heads * spec.head_dim * b * (context if g else min(context, spec.sliding_window))
                       for g in is_global)


def test_import_does_not_import_torch():
    code = "import sys, infopt.llm.memory as m; m.kv_cache_bytes(m.MODELS['Llama 3 8B'], 8, 'fp16'); " \
           "print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_llama3_8b_at_8k_fp16_is_one_gibibyte():
    # 2 * 32 layers * 8 KV heads * 128 * 2 bytes = 131072 bytes per token; 8192 tokens -> 2**30
    assert kv_cache_bytes(MODELS["Llama 3 8B"], 8192, "fp16") == 2 ** 30
    assert kv_cache_bytes(MODELS["Llama 3 8B"], 8192, "int4", batch=4) == 2 ** 30


def test_deepseek_mla_caches_one_latent_per_layer():
    spec = MODELS["DeepSeek-V3"]
    assert kv_cache_bytes(spec, 1, "fp16") == (512 + 64) * 61 * 2
    # an uncompressed MHA cache of the same model (128 heads, K 192 and V 128 wide) would be ~68x larger
    mha = 61 * 128 * (192 + 128) * 2
    assert mha / kv_cache_bytes(spec, 1, "fp16") > 60


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("dtype", ["fp16", "fp8", "int4"])
@pytest.mark.parametrize("context", [1, 1000, 1024, 1025, 4096, 131072, 1 << 20])
def test_formula_matches_a_layer_by_layer_count(name, dtype, context):
    spec = MODELS[name]
    assert kv_cache_bytes(spec, context, dtype, batch=3) == pytest.approx(layer_by_layer_kv(spec, context, dtype, 3))


def test_gemma_sliding_window_layers_stop_growing_after_the_window():
    spec = MODELS["Gemma 3 27B"]
    assert (spec.local_layers, spec.n_layers - spec.local_layers, spec.sliding_window) == (52, 10, 1024)
    per_layer_token = 2 * 16 * 128 * 2
    # below the window every layer grows; above it only the 10 global layers do
    assert kv_cache_bytes(spec, 1000, "fp16") - kv_cache_bytes(spec, 999, "fp16") == 62 * per_layer_token
    assert kv_cache_bytes(spec, 5000, "fp16") - kv_cache_bytes(spec, 4999, "fp16") == 10 * per_layer_token
    full = replace(spec, name="no window", local_layers=0, sliding_window=0)
    ratio = kv_cache_bytes(full, 131072, "fp16") / kv_cache_bytes(spec, 131072, "fp16")
    assert 5.5 < ratio < 6.2          # 62 / (10 + 52 * 1024 / 131072)


@pytest.mark.parametrize("bad, match", [
    (dict(context_len=-1), "context_len"), (dict(context_len=1.5), "context_len"), (dict(batch=0), "batch"),
    (dict(dtype="fp12"), "dtype must be one of"), (dict(dtype=2), "dtype must be one of"),
])
def test_bad_input_is_a_clear_error(bad, match):
    args = dict(spec=MODELS["Qwen3 8B"], context_len=16, dtype="fp16", batch=1) | bad
    with pytest.raises(ValueError, match=match):
        kv_cache_bytes(**args)
    with pytest.raises(TypeError, match="ModelSpec"):
        kv_cache_bytes({"n_layers": 32}, 16, "fp16")


def test_spec_validation():
    with pytest.raises(ValueError, match="attention"):
        ModelSpec(name="x", n_layers=1, n_heads=1, n_kv_heads=1, head_dim=8, hidden=8, params_b=1,
                  active_params_b=1, attention="mqa")
    with pytest.raises(ValueError, match="sliding_window"):
        ModelSpec(name="x", n_layers=2, n_heads=1, n_kv_heads=1, head_dim=8, hidden=8, params_b=1,
                  active_params_b=1, local_layers=1)


@pytest.mark.parametrize("name, tolerance", [("Llama 3 8B", 0.001), ("Llama 3 70B", 0.001), ("Qwen3 8B", 0.001),
                                             ("Qwen3 235B-A22B", 0.002), ("Gemma 3 27B", 0.001)])
def test_published_parameter_counts_follow_from_the_configs(name, tolerance):
    spec = MODELS[name]
    assert memory.gqa_param_count(spec) / 1e9 == pytest.approx(spec.params_b, rel=tolerance)


def test_moe_active_parameters_follow_from_top_k():
    spec = MODELS["Qwen3 235B-A22B"]
    active = replace(spec, experts=spec.experts_active)   # the 8 experts a token visits
    assert memory.gqa_param_count(active) / 1e9 == pytest.approx(spec.active_params_b, rel=0.02)
    assert MODELS["DeepSeek-V3"].moe_layers == 58


def test_every_model_names_its_source():
    for spec in MODELS.values():
        assert "config" in spec.source and "/" in spec.source, spec.name


def test_max_context_is_the_largest_that_fits():
    spec, gpu = MODELS["Llama 3 8B"], GPUS["80 GB (H100)"]
    n = max_context(spec, gpu, "fp16")
    assert weight_bytes(spec, "fp16") + kv_cache_bytes(spec, n, "fp16") <= gpu
    assert weight_bytes(spec, "fp16") + kv_cache_bytes(spec, n + 1, "fp16") > gpu
    assert max_context(spec, gpu, "fp16", batch=8) == pytest.approx(n / 8, abs=1)
    assert max_context(spec, gpu, "fp16", reserve=0.2) < n
    assert max_context(spec, gpu, "fp8", weights_dtype="fp16") > n      # FP8 KV beside FP16 weights
    # Llama 3 70B in FP16 (141.1 GB of weights) fits on neither GPU; DeepSeek-V3 even at INT4 needs several
    assert max_context(MODELS["Llama 3 70B"], GPUS["141 GB (H200)"], "fp16") == 0
    assert max_context(MODELS["DeepSeek-V3"], GPUS["141 GB (H200)"], "int4") == 0


def test_fits_table_rows_agree_with_the_formulas():
    rows = memory.fits_table(["Gemma 3 27B", "Llama 3 70B"], dtypes=("fp16", "fp8"), contexts=(4096, 1 << 20))
    assert len(rows) == 2 * 2 * 2
    for r in rows:
        spec = MODELS[r["model"]]
        total = kv_cache_bytes(spec, r["context"], r["dtype"]) + weight_bytes(spec, r["dtype"])
        assert r["total_gb"] == pytest.approx(total / 1e9)
        for gpu, cap in GPUS.items():
            assert r[f"fits {gpu}"] == (total <= cap)
    by = {(r["model"], r["dtype"], r["context"]): r for r in rows}
    assert by[("Gemma 3 27B", "fp8", 4096)]["fits 80 GB (H100)"]
    assert not by[("Llama 3 70B", "fp16", 4096)]["fits 141 GB (H200)"]
    table = memory.max_context_table(["Llama 3 8B"], dtypes=("fp16",))
    assert table[0]["max context 80 GB (H100)"] == max_context(MODELS["Llama 3 8B"], 80e9, "fp16")


def test_figure_has_a_line_per_model_and_dtype_and_the_gpu_lines():
    fig = memory.kv_memory_figure(["Llama 3 8B", "DeepSeek-V3"], dtypes=("fp16", "int4"))
    assert len(fig.data) == 4
    assert {t.name for t in fig.data} == {"Llama 3 8B fp16", "Llama 3 8B int4", "DeepSeek-V3 fp16",
                                          "DeepSeek-V3 int4"}
    assert list(fig.data[0].x) == list(memory.CONTEXTS) and fig.data[0].x[0] == 4096 and fig.data[0].x[-1] == 2 ** 20
    assert fig.data[0].y[0] == pytest.approx((kv_cache_bytes(MODELS["Llama 3 8B"], 4096, "fp16")
                                              + weight_bytes(MODELS["Llama 3 8B"], "fp16")) / 1e9)
    assert sorted(s.y0 for s in fig.layout.shapes) == [80.0, 141.0]


# --- the formula against what the tiny model's caches allocate ---------------------------------------------------
torch = pytest.importorskip("torch")


def test_tiny_specs_match_the_model():
    from infopt.llm.model import TARGET_CONFIG, TinyLlama

    spec = memory.TINY["target"]
    assert (spec.n_layers, spec.n_kv_heads, spec.head_dim) == (TARGET_CONFIG.n_layers, TARGET_CONFIG.n_kv_heads,
                                                              TARGET_CONFIG.head_dim)
    assert round(spec.params_b * 1e9) == TinyLlama(TARGET_CONFIG).num_parameters()
    from infopt.llm.kv_cache import kv_bytes_per_token
    assert kv_cache_bytes(spec, 1, "fp32") == kv_bytes_per_token(TARGET_CONFIG, 4)


@pytest.mark.parametrize("dtype, name", [(torch.float32, "fp32"), (torch.float16, "fp16")])
def test_formula_equals_what_the_contiguous_cache_allocates(dtype, name):
    from infopt.llm.kv_cache import ContiguousKVCache
    from infopt.llm.model import TARGET_CONFIG, TinyLlama

    torch.manual_seed(0)
    spec, max_seqs, max_len, t = memory.TINY["target"], 3, 64, 13
    cache = ContiguousKVCache(TARGET_CONFIG, max_seqs, max_len, dtype=dtype)
    allocated = cache.k.untyped_storage().nbytes() + cache.v.untyped_storage().nbytes()
    assert allocated == cache.bytes_reserved() == kv_cache_bytes(spec, max_len, name, batch=max_seqs)
    if dtype == torch.float32:      # fill it with a real prefill: the bytes holding tokens are the formula at t
        tokens = torch.randint(0, 256, (2, t))
        with torch.no_grad():
            TinyLlama(TARGET_CONFIG).hidden(tokens, torch.arange(t).expand(2, t), cache=cache, seq_ids=[0, 1])
        assert cache.bytes_used() == kv_cache_bytes(spec, t, name, batch=2)


def test_formula_equals_what_the_paged_cache_allocates():
    from infopt.llm.model import TARGET_CONFIG, TinyLlama
    from infopt.llm.paged import PagedKVCache

    spec, num_blocks, block_size, t = memory.TINY["target"], 10, 16, 21
    cache = PagedKVCache(TARGET_CONFIG, num_blocks, block_size)
    allocated = cache.k.untyped_storage().nbytes() + cache.v.untyped_storage().nbytes()
    assert allocated == cache.bytes_reserved() == kv_cache_bytes(spec, num_blocks * block_size, "fp32")
    cache.add_sequence(0)
    with torch.no_grad():
        TinyLlama(TARGET_CONFIG).hidden(torch.randint(0, 256, (1, t)), torch.arange(t)[None], cache=cache,
                                        seq_ids=[0])
    assert cache.bytes_used() == kv_cache_bytes(spec, t, "fp32")
    assert cache.blocks_used == 2      # 21 tokens in blocks of 16
