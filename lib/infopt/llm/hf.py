"""The reference nobody here wrote: our tiny Llama's weights in Hugging Face transformers' `LlamaForCausalLM`.

Our parameter names are HF's without the `model.` prefix of the decoder (lm_head keeps its name), so the mapping is
a rename. Nothing is downloaded: the config is built from ours and the weights are copied in memory. transformers
is imported inside the functions.
"""
from __future__ import annotations

from .model import TinyConfig, TinyLlama
from .tokenizer import BOS, EOS, PAD


def to_hf_config(cfg: TinyConfig):
    """A `transformers.LlamaConfig` with our shape (untied embeddings, no biases, SiLU, RoPE theta, RMSNorm eps) and
    eager attention (the plain softmax(q k^T / sqrt(d)) v, as ours)."""
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=cfg.vocab_size, hidden_size=cfg.dim, intermediate_size=cfg.ffn_dim,
        num_hidden_layers=cfg.n_layers, num_attention_heads=cfg.n_heads, num_key_value_heads=cfg.n_kv_heads,
        head_dim=cfg.head_dim, max_position_embeddings=cfg.max_seq_len, rms_norm_eps=cfg.norm_eps,
        rope_parameters={"rope_type": "default", "rope_theta": float(cfg.rope_theta)}, hidden_act="silu",
        tie_word_embeddings=False, attention_bias=False, mlp_bias=False, attention_dropout=0.0,
        bos_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD, attn_implementation="eager",
    )


def hf_state_dict(model: TinyLlama) -> dict:
    """Our state_dict under HF's names: `model.` before every decoder weight, lm_head as it is."""
    return {(k if k.startswith("lm_head.") else f"model.{k}"): v.detach().clone() for k, v in model.state_dict().items()}


def to_hf_model(model: TinyLlama):
    """A `LlamaForCausalLM` holding our model's weights (float32, eval mode, on the model's device)."""
    import torch
    from transformers import LlamaForCausalLM

    device = next(model.parameters()).device
    with torch.device(device):
        hf = LlamaForCausalLM(to_hf_config(model.config))
    missing, unexpected = hf.load_state_dict(hf_state_dict(model), strict=False)
    if missing or unexpected:
        raise RuntimeError(f"the weight mapping to LlamaForCausalLM is off: missing {missing}, unexpected {unexpected}")
    return hf.to(torch.float32).eval()


def hf_generate_greedy(hf_model, prompt_ids: list[int], max_new_tokens: int) -> list[int]:
    """HF's `generate(do_sample=False)` on one prompt (its own KV cache, stopping after EOS): the new tokens only."""
    import torch

    device = next(hf_model.parameters()).device
    ids = torch.tensor([list(prompt_ids)], dtype=torch.long, device=device)
    with torch.inference_mode():
        out = hf_model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens,
                                min_new_tokens=0, do_sample=False, num_beams=1, eos_token_id=EOS, pad_token_id=PAD,
                                temperature=None, top_k=None, top_p=None)
    new = out[0, ids.shape[1]:].tolist()
    if EOS in new:                     # generate pads finished sequences; keep through the first EOS
        new = new[:new.index(EOS) + 1]
    return new
