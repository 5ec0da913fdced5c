"""The reference nobody here wrote: our weights in transformers' LlamaForCausalLM (built from `to_hf_config`, nothing
downloaded) give our logits to 1e-4, and HF's greedy `generate` gives our greedy tokens through every cache."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from infopt.llm.generate import generate  # noqa: E402
from infopt.llm.hf import hf_generate_greedy, to_hf_config, to_hf_model  # noqa: E402
from infopt.llm.model import DRAFT_CONFIG, TARGET_CONFIG, TinyConfig, TinyLlama, load_model  # noqa: E402
from infopt.llm.tokenizer import ByteTokenizer  # noqa: E402
from infopt.llm.train import corpus_text  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def target_pair():
    model = load_model("target")
    return model, to_hf_model(model)


def corpus_prompts(n: int, length: int, seed: int) -> list[list[int]]:
    """n prompts of `length` bytes cut at random places from the training text, each after BOS."""
    data = corpus_text().encode("utf-8")
    gen = torch.Generator().manual_seed(seed)
    starts = torch.randint(0, len(data) - length, (n,), generator=gen).tolist()
    return [ByteTokenizer().encode(data[s:s + length].decode("utf-8", errors="ignore")) for s in starts]


def test_hf_config_mirrors_ours():
    cfg = to_hf_config(TARGET_CONFIG)
    assert (cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim,
            cfg.intermediate_size, cfg.vocab_size) == (128, 4, 4, 2, 32, 352, 259)
    assert cfg.rope_parameters["rope_theta"] == TARGET_CONFIG.rope_theta and cfg.rms_norm_eps == 1e-5
    assert cfg.tie_word_embeddings is False


@pytest.mark.parametrize("which", ["target", "draft", "random-odd-shape"])
def test_logits_equal_hf_llama_on_random_prompts(which):
    if which == "random-odd-shape":    # a shape of its own: 3 query heads per KV head, another theta and eps
        model = TinyLlama(TinyConfig(dim=48, n_layers=2, n_heads=6, n_kv_heads=2, head_dim=16, ffn_dim=80,
                                     rope_theta=500.0, norm_eps=1e-6), seed=11).eval()
    else:
        model = load_model(which)
    hf = to_hf_model(model)
    gen = torch.Generator().manual_seed(3)
    tokens = torch.randint(0, model.config.vocab_size, (3, 70), generator=gen)
    with torch.no_grad():
        ours, theirs = model(tokens), hf(tokens).logits
        text = torch.tensor(corpus_prompts(2, 200, seed=4)[0][:150])[None]
        ours_text, theirs_text = model(text), hf(text).logits
    err = max(float((ours - theirs).abs().max()), float((ours_text - theirs_text).abs().max()))
    assert err < 1e-4, f"max |ours - HF| = {err:.2e}"
    assert float(ours.std()) > 0.01    # not a trivially flat model


@pytest.mark.parametrize("cache", ["none", "contiguous", "paged"])
def test_greedy_generation_equals_hf_generate_token_for_token(target_pair, cache):
    model, hf = target_pair
    prompts = corpus_prompts(4, 40, seed=9) + corpus_prompts(1, 330, seed=2)    # the last runs to position ~360
    for prompt in prompts:
        ours = generate(model, prompt, 32, cache=cache, block_size=8).tokens
        assert len(ours) == 32 and ours == hf_generate_greedy(hf, prompt, 32), ByteTokenizer().decode(prompt)
