# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Unit 08 — LLM inference basics: the KV cache, paging, batching, speculation and the arithmetic of real models
#
# Serving a language model is a loop: run the model, pick a token, append it, run again. Everything a serving
# engine such as **vLLM**, **TensorRT-LLM** or **Hugging Face**'s `generate` does is about making that loop cheap
# for many users at once. In this unit you build each piece on a real (tiny) model and measure it:
#
# 1. what a token costs: **prefill** (the prompt, all at once) against **decode** (one token per step), and why
#    decode is limited by memory bandwidth;
# 2. the **KV cache**, which turns each decode step from "recompute the whole prefix" into "compute one token";
# 3. the **paged** KV cache of vLLM: a block allocator, block tables, copy-on-write sharing, attention through
#    the table;
# 4. **batching**: static against continuous (in-flight) batching, the scheduler step, preemption, chunked
#    prefill, and the throughput/latency trade-off tuned to a latency target (an SLA);
# 5. **speculative decoding** with a draft model, **multi-token prediction** (MTP) and how **EAGLE** differs;
# 6. **long context**: the KV memory of Llama 3, Qwen 3, Gemma 3 and DeepSeek-V3 from 4K to 1M tokens;
# 7. the **parallelism forms** (data, tensor, pipeline, expert), counted, and tensor parallelism run for real on
#    two processes;
# 8. **disaggregated serving**: prefill and decode on separate pools.
#
# The model is a Llama (RMSNorm, RoPE, SwiGLU, grouped-query attention) with 128-wide layers, trained for a minute
# on the Python standard library's own source, so its text looks like Python. Its weights load into
# Hugging Face's `LlamaForCausalLM`, which is our reference: same logits, same tokens.
#
# It builds on unit 01 (graphs and operators) and unit 06 (why a kernel is memory- or compute-bound); the
# exercises use `infopt.grading` like every unit. About three hours.
#
# **Graded exercises** (autograded; each has visible tests you can run and hidden tests on fresh random inputs):
#
# | # | function | points | why that many |
# |---|---|---|---|
# | 1 | `attend_with_cache(q, k_new, v_new, k_cache, v_cache, pos)` — attention with a KV-cache update | 3 | positions, a causal chunk, GQA and stale slots at once |
# | 2 | `append_slot(allocator, table, num_tokens, block_size)` — the block allocator's append, with copy-on-write | 2 | three cases and an order of operations |
# | 3 | `paged_attention(q, k_blocks, v_blocks, table, context_len)` — attention through a block table | 2 | exercise 1's attention, read through a table |
# | 4 | `schedule_step(waiting, running, free_blocks, block_size, max_batch)` — a continuous-batching step with preemption | 5 | admission, growth and preemption interact, in order |
# | 5 | `speculative_accept(draft_tokens, draft_probs, target_probs, rng)` — the accept/reject rule of speculative sampling | 4 | a random rule graded by its law: the residual and the bonus token |
# | 6 | `kv_cache_bytes(spec, context_len, dtype, batch=1)` — the KV memory of a real model | 2 | a formula, with MLA and windows |
#
# Points track how much there is to get right, not how long the code is.
#
# The exercises are independent: the notebook uses the library's versions (`infopt.llm`), not your code, to
# build the next step. Test failures say what was expected and what your code returned.

# %%
import math
import time

import numpy as np
import plotly.graph_objects as go
import torch
from IPython.display import display

from infopt.grading import check_array, check_equal, check_raises, check_true
from infopt.llm.model import TARGET_CONFIG, DRAFT_CONFIG, load_model
from infopt.llm.tokenizer import ByteTokenizer

_T0 = time.perf_counter()
# One thread: on a small shared machine torch's worker threads wait on each other (a tiny model's pass ran 9x
# slower with two threads than with one here), and every figure below is a ratio measured in this process.
torch.set_num_threads(1)
torch.manual_seed(0)
tok = ByteTokenizer()
target = load_model("target")
draft = load_model("draft")
print(f"target: {target.num_parameters():,} parameters, {TARGET_CONFIG}")
print(f"draft:  {draft.num_parameters():,} parameters, {DRAFT_CONFIG}")

# %% [markdown]
# ## 1. What a token costs: prefill and decode
#
# The tokenizer here is bytes: ids 0–255 are the bytes of UTF-8 text, and three more ids mark padding, the
# beginning and the end of a sequence. A continuation of a prompt, each token sampled at temperature 0.8 from the
# most likely tokens that make up 90% of the probability (a fixed seed, so every run prints the same text). The
# model has read Python's standard library for a minute: expect Python-looking text, not good Python. (Always
# taking the most likely token, *greedy* decoding, makes this model repeat itself; section 5 shows it, and why.)

# %%
from infopt.llm.generate import generate
from infopt.llm.sampling import SamplingParams

prompt = tok.encode("def __init__(self, ")
res = generate(target, prompt, 48, SamplingParams(temperature=0.8, top_p=0.9), cache="contiguous", seed=0)
print(repr(tok.decode(prompt)), "->", repr(tok.decode(res.tokens)))
print(f"{len(res.tokens)} tokens in {res.forward_passes} forward passes, {res.seconds * 1e3:.0f} ms")

# %% [markdown]
# Generation has two phases. **Prefill** runs the whole prompt through the model in one forward pass (every
# prompt token at once, a matrix-matrix product per layer) and yields the first new token. **Decode** then runs one
# forward pass per new token, each with a single token per sequence: a matrix-*vector* product per layer, which
# reads every weight once to do two floating-point operations with it.
#
# Time one forward pass of T tokens of one sequence (a prefill of length T), and one forward pass of B sequences
# with one token each (a batched decode step, before any attention context exists):

# %%
@torch.no_grad()
def forward_ms(model: torch.nn.Module, batch: int, tokens: int, repeats: int = 5) -> float:
    """Median wall time (ms) of one forward pass over a [batch, tokens] block of token ids."""
    x = torch.randint(0, 256, (batch, tokens))
    model(x)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        model(x)
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times))


sizes = [1, 4, 16, 64, 256]
prefill_ms = [forward_ms(target, 1, n) for n in sizes]
decode_ms = [forward_ms(target, n, 1) for n in sizes]
for n, p, d in zip(sizes, prefill_ms, decode_ms):
    print(f"{n:>4} tokens: prefill {p:6.2f} ms ({p / n:6.3f} ms/token)   batched decode {d:6.2f} ms "
          f"({d / n:6.3f} ms/token)")
fig = go.Figure()
fig.add_trace(go.Scatter(x=sizes, y=[p / n for n, p in zip(sizes, prefill_ms)], name="prefill: T tokens, 1 sequence"))
fig.add_trace(go.Scatter(x=sizes, y=[d / n for n, d in zip(sizes, decode_ms)], name="decode: B sequences, 1 token"))
fig.update_layout(title="tiny target on this CPU: time per token of one forward pass", height=360,
                  xaxis=dict(type="log", title="tokens in the forward pass (T or B)"),
                  yaxis=dict(type="log", title="ms per token"))
fig.show()

# %% [markdown]
# On a machine with an NVIDIA GPU the same two measurements run there too (when there is none, this cell says
# that it skipped them): at this model size a GPU pass is almost all launch overhead, so the per-token cost
# falls even more steeply with the tokens per pass.

# %%
if torch.cuda.is_available():
    gpu_target = load_model("target", device="cuda")

    @torch.no_grad()
    def gpu_forward_ms(batch: int, tokens: int, repeats: int = 10) -> float:
        """Median wall time (ms) of one forward pass on the GPU, synchronised before the clock stops."""
        x = torch.randint(0, 256, (batch, tokens), device="cuda")
        gpu_target(x)
        torch.cuda.synchronize()
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            gpu_target(x)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        return 1e3 * float(np.median(times))

    print(f"on {torch.cuda.get_device_name()}:")
    for n in sizes:
        p, d = gpu_forward_ms(1, n), gpu_forward_ms(n, 1)
        print(f"{n:>4} tokens: prefill {p:6.2f} ms ({p / n:6.3f} ms/token)   batched decode {d:6.2f} ms "
              f"({d / n:6.3f} ms/token)")
    del gpu_target
else:
    print("no GPU on this machine: the figures above are the CPU's (a GPU, when present, is timed here too)")

# %% [markdown]
# The cost per token falls steeply as more tokens share one pass: the pass costs a fixed amount (reading the
# weights, launching each operator) plus a little per token. One token per pass, as in decode, pays the whole
# fixed cost for one token. On this CPU the fixed part is mostly operator overhead, because the tiny model's
# 3 MB of weights sit in cache; on a GPU serving a real model it is the **weight bytes**, and the arithmetic says
# how much. Take Llama 3 8B in BF16 on an H200 (4.8 TB/s of HBM bandwidth, 989 TFLOP/s of dense BF16, from
# NVIDIA's data sheet):

# %%
from infopt.llm.memory import MODELS, weight_bytes

llama8b = MODELS["Llama 3 8B"]
HBM_BYTES_S, BF16_FLOPS = 4.8e12, 989e12
w = weight_bytes(llama8b, "bf16")
t_read = w / HBM_BYTES_S
flops_per_token = 2 * llama8b.params_b * 1e9
ridge = t_read * BF16_FLOPS / flops_per_token
print(f"weights {w / 1e9:.1f} GB: reading them once takes {t_read * 1e3:.2f} ms, so one sequence decodes at most "
      f"{1 / t_read:.0f} tokens/s")
print(f"one token costs {flops_per_token / 1e9:.0f} GFLOP = {flops_per_token / BF16_FLOPS * 1e6:.1f} us of compute: "
      f"decode stays memory-bound until about {ridge:.0f} tokens share each pass")
print(f"a 2048-token prefill: {2048 * flops_per_token / BF16_FLOPS * 1e3:.1f} ms of compute against "
      f"{t_read * 1e3:.1f} ms of weight reads: compute-bound")

# %% [markdown]
# So a decode step of a few sequences leaves the GPU's arithmetic almost idle: **decode is memory-bound**, and
# the ways to make it cheaper are to read fewer bytes per token (smaller weights: quantization, unit 12; a smaller
# KV cache: below) or to make each read of the weights serve more tokens: **batching** many sequences into one
# step (section 4) and **speculation**, verifying several tokens of one sequence in one step (section 5).
#
# Before building on this model, check it against code nobody here wrote. `infopt.llm.hf` maps our config to a
# `transformers.LlamaConfig` and loads our weights into Hugging Face's `LlamaForCausalLM`:

# %%
from infopt.llm.hf import hf_generate_greedy, to_hf_model

hf_target = to_hf_model(target)
ids = torch.tensor([tok.encode("import os\nimport sys\n\ndef main(argv):\n")])
with torch.no_grad():
    ours, theirs = target(ids), hf_target(ids).logits
print(f"logits: max |ours - Hugging Face| = {(ours - theirs).abs().max().item():.2e} over {ours.numel():,} values")
hf_tokens = hf_generate_greedy(hf_target, prompt, 48)
print("greedy generation equals Hugging Face's generate, token for token:", hf_tokens == res.tokens)

# %% [markdown]
# ## 2. The KV cache
#
# In attention, token t's output reads the **keys** and **values** of every token before it. With no cache, each
# decode step recomputes them for the whole prefix: step n costs a forward pass over n tokens, and a generation of
# N tokens costs about N²/2 token-passes. The K and V of a past token stay the same (its position and its inputs
# are fixed), so a **KV cache** stores them: each decode step computes the new token's q, k, v, appends k and v to
# the cache and attends to what is stored. Time one step of each kind as the sequence grows:

# %%
from infopt.llm.kv_cache import ContiguousKVCache, kv_bytes_per_token


@torch.no_grad()
def step_times(model: torch.nn.Module, n_steps: int, every: int = 16) -> tuple[list[int], list[float], list[float]]:
    """Per-step wall time (ms) at growing lengths: recomputing the whole prefix vs one cached token."""
    cfg = model.config
    cache = ContiguousKVCache(cfg, max_seqs=1, max_len=n_steps + 1)
    seq = torch.randint(0, 256, (1, 1))
    lengths, full_ms, cached_ms = [], [], []
    for n in range(n_steps):
        t0 = time.perf_counter()
        logits = model(seq[:, -1:], torch.tensor([[n]]), cache)
        dt = time.perf_counter() - t0
        if n % every == every - 1:
            t1 = time.perf_counter()
            model(seq)
            lengths.append(n + 1)
            full_ms.append(1e3 * (time.perf_counter() - t1))
            cached_ms.append(1e3 * dt)
        seq = torch.cat([seq, logits[:, -1:].argmax(-1)], dim=1)
    return lengths, full_ms, cached_ms


lengths, full_ms, cached_ms = step_times(target, 256)
fig = go.Figure([go.Scatter(x=lengths, y=full_ms, name="no cache: forward over the whole prefix"),
                 go.Scatter(x=lengths, y=cached_ms, name="KV cache: forward over one token")])
fig.update_layout(title="one decode step of the tiny target", xaxis_title="tokens in the sequence",
                  yaxis_title="ms per step", height=340)
fig.show()

# %% [markdown]
# And whole generations, with the library's `generate` (the same tokens either way; the cache changes the cost):

# %%
gen_prompt = tok.encode("class Path:\n    def ")
runs = {mode: generate(target, gen_prompt, 128, cache=mode, stop_at_eos=False) for mode in ("none", "contiguous")}
print("same tokens with and without the cache:", runs["none"].tokens == runs["contiguous"].tokens)
for mode, r in runs.items():
    print(f"cache={mode:10}: {len(r.tokens)} tokens, {r.forward_passes} forward passes, {r.seconds:.2f} s "
          f"({len(r.tokens) / r.seconds:.0f} tokens/s)")
speedup = runs["none"].seconds / runs["contiguous"].seconds
print(f"speed-up of the cache at {len(runs['none'].tokens)} tokens: {speedup:.1f}x")

# %% [markdown]
# The price is memory. Each token stores a key and a value per layer and per **KV head**:
# `2 × n_layers × n_kv_heads × head_dim × bytes`. Grouped-query attention (GQA) is how Llama shrinks it: 4 query
# heads share 2 KV heads here (Llama 3 8B: 32 query heads, 8 KV heads), so the cache is half (a quarter) of what
# one K/V per query head would take. A **contiguous** cache, like Hugging Face's `StaticCache`, reserves room for
# `max_len` tokens per sequence up front:

# %%
per_token = kv_bytes_per_token(TARGET_CONFIG, 4)
contig = ContiguousKVCache(TARGET_CONFIG, max_seqs=8, max_len=512)
print(f"tiny target, float32: {per_token} bytes per token "
      f"(2 x {TARGET_CONFIG.n_layers} layers x {TARGET_CONFIG.n_kv_heads} KV heads x {TARGET_CONFIG.head_dim} x 4 B)")
print(f"contiguous cache for 8 sequences x 512 tokens: {contig.bytes_reserved() / 2**20:.1f} MiB reserved, "
      f"= 8 x 512 x {per_token} B: {contig.bytes_reserved() == 8 * 512 * per_token}")
llama_per_token = 2 * 32 * 8 * 128 * 2   # 2 (K, V) x 32 layers x 8 KV heads x 128 x 2 bytes (bf16)
print(f"Llama 3 8B, bf16: {llama_per_token / 2**10:.0f} KiB per token, "
      f"{llama_per_token * 8192 / 2**30:.1f} GiB for one 8K-token sequence")

# %% [markdown]
# **How the real systems do it.** Hugging Face's `generate` uses a `DynamicCache` by default (each layer's K and
# V grow by `torch.cat` as tokens arrive) and offers `StaticCache` (pre-allocated `max_cache_len`, the shape
# `torch.compile` and CUDA graphs need): our `ContiguousKVCache`. vLLM and TensorRT-LLM always page the cache
# (next section). In every one of them, the step you write now is the same: store the new K/V at the right
# positions, then attend each new query to everything stored at or before its position.
#
# ### Exercise 1 — attention with a KV-cache update (3 points)
#
# Write `attend_with_cache(q, k_new, v_new, k_cache, v_cache, pos)` for one sequence and one layer. `q` is
# `[Hq, T, D]` (the queries of T new tokens, after RoPE), `k_new` and `v_new` are `[Hkv, T, D]`, and `k_cache`,
# `v_cache` are `[Hkv, max_len, D]`, already holding the keys and values of positions `0 .. pos - 1`.
#
# 1. Write `k_new` and `v_new` into the caches in place at positions `pos .. pos + T - 1`.
# 2. Query t sits at position `pos + t` and attends to cached positions `0 .. pos + t`: everything cached before,
#    the tokens before it in this chunk and itself (a prefill chunk of T > 1 tokens is causal inside the chunk).
# 3. The slots after `pos + T - 1` hold stale values of an earlier sequence: never read them.
# 4. Grouped-query attention: query head h reads KV head `h // (Hq // Hkv)` (Hugging Face's `repeat_kv`).
# 5. The scores are `q · k / sqrt(D)`, softmax over the keys, then the weighted sum of the values.
# 6. Return a torch tensor `[Hq, T, D]` with the dtype of `q`. The caches may hold a narrower dtype than `q` (a
#    float16 cache for float32 queries): compute in `q`'s dtype.
# 7. Raise `ValueError` with a message that names `max_len` (its value) when `pos + T > max_len`, and raise
#    `ValueError` when the shapes disagree: `k_new` or `v_new` not `[Hkv, T, D]` (the cache's Hkv, `q`'s T and D),
#    `v_cache` not the shape of `k_cache`, the caches' D not `q`'s, or Hq not a multiple of Hkv.
#
# Do not change `q`, `k_new` or `v_new`. Do not call `infopt.llm.kv_cache.attend_with_cache` or
# `infopt.llm.model.grouped_attention`; torch's own functions (`torch.softmax`,
# `torch.nn.functional.scaled_dot_product_attention`, ...) are fine.
#
# The tests compare your output and your caches with the library's reference on random shapes, cached lengths and
# chunk sizes (float32 to 1e-5, float64 to 1e-10), with scores far from 0 in one case.

# %% solution=true grade_id="attend_with_cache"
def attend_with_cache(q: torch.Tensor, k_new: torch.Tensor, v_new: torch.Tensor, k_cache: torch.Tensor,
                      v_cache: torch.Tensor, pos: int) -> torch.Tensor:
    """Store k_new/v_new at positions pos.. in the caches, then attend each query to positions 0..pos+t."""
    ### BEGIN SOLUTION
    hq, t, d = q.shape
    hkv, max_len, dc = k_cache.shape
    if k_new.shape != (hkv, t, d) or v_new.shape != (hkv, t, d) or v_cache.shape != k_cache.shape or dc != d:
        raise ValueError(f"shapes disagree: q {tuple(q.shape)}, k_new {tuple(k_new.shape)}, v_new "
                         f"{tuple(v_new.shape)}, caches {tuple(k_cache.shape)} / {tuple(v_cache.shape)}")
    if hq % hkv:
        raise ValueError(f"Hq = {hq} is not a multiple of Hkv = {hkv}")
    if pos + t > max_len:
        raise ValueError(f"{t} tokens at position {pos} do not fit in a cache of max_len = {max_len}")
    k_cache[:, pos:pos + t] = k_new
    v_cache[:, pos:pos + t] = v_new
    n = pos + t
    group = hq // hkv
    keys = k_cache[:, :n].repeat_interleave(group, dim=0).to(q.dtype)       # [Hq, n, D]
    values = v_cache[:, :n].repeat_interleave(group, dim=0).to(q.dtype)
    scores = q @ keys.transpose(1, 2) / math.sqrt(d)                         # [Hq, T, n]
    allowed = torch.arange(n)[None, :] <= torch.arange(pos, n)[:, None]      # [T, n]
    scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.softmax(scores, dim=-1) @ values
    ### END SOLUTION


# %% grade_id="attend_with_cache_test" points=3
from infopt.grading import call_student, case, forbidding, grading_rng
from infopt.kernels import ATTENTION_ROUTES
from infopt.llm import kv_cache as _kv_ref

# While your function runs, the library's reference and its attention raise: write the masked attention yourself.
# So do the other units' attention functions that compute the same answer (unit 10's kernels and references).
_attend = forbidding(attend_with_cache, "infopt.llm.kv_cache:*", "infopt.llm.model:grouped_attention",
                     "infopt.llm.paged:paged_attention", *ATTENTION_ROUTES,
                     exercise="attention with a KV-cache update")


def _attend_inputs(hq: int, hkv: int, t: int, d: int, max_len: int, pos: int, seed: int,
                   dtype: torch.dtype = torch.float32, cache_dtype: torch.dtype | None = None,
                   offset: float = 0.0) -> tuple:
    """q, k_new, v_new and caches whose positions 0..pos-1 hold a prefix and whose slots from pos + T on hold NaN
    (an earlier sequence's stale values: reading them, even masked, spoils the output). With `offset`, every
    score is offset + a normal draw (key coordinate 0 is 1, query coordinate 0 is offset * sqrt(D)): scores far
    from 0, where exp overflows without the max subtracted."""
    g = torch.Generator().manual_seed(seed)
    cache_dtype = cache_dtype or dtype
    q, k_new, v_new = (torch.randn(h, t, d, generator=g, dtype=dtype) for h in (hq, hkv, hkv))
    k_cache = torch.full((hkv, max_len, d), float("nan"), dtype=cache_dtype)
    v_cache = torch.full((hkv, max_len, d), float("nan"), dtype=cache_dtype)
    k_cache[:, :pos + t] = 3.0 * torch.randn(hkv, pos + t, d, generator=g, dtype=dtype).to(cache_dtype) + 2.0
    v_cache[:, :pos + t] = 3.0 * torch.randn(hkv, pos + t, d, generator=g, dtype=dtype).to(cache_dtype) - 2.0
    k_cache[:, :pos] = torch.randn(hkv, pos, d, generator=g, dtype=dtype).to(cache_dtype)
    v_cache[:, :pos] = torch.randn(hkv, pos, d, generator=g, dtype=dtype).to(cache_dtype)
    if offset:
        k_cache[:, :, 0], k_new[:, :, 0] = 1.0, 1.0
        q[:, :, 0] = offset * math.sqrt(d)
    return q, k_new, v_new, k_cache, v_cache


def _same(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Elementwise equality where NaN equals NaN (the stale slots hold NaN)."""
    return (a == b) | (torch.isnan(a) & torch.isnan(b))


def _check_attend(hq: int, hkv: int, t: int, d: int, max_len: int, pos: int, seed: int, rule: str,
                  dtype: torch.dtype = torch.float32, cache_dtype: torch.dtype | None = None,
                  offset: float = 0.0) -> None:
    """Your output and caches against the reference's, on copies of the same inputs; `rule` names what this case
    isolates (the message when the values differ)."""
    q, k_new, v_new, k_cache, v_cache = _attend_inputs(hq, hkv, t, d, max_len, pos, seed, dtype, cache_dtype, offset)
    k_want, v_want = k_cache.clone(), v_cache.clone()
    want = _kv_ref.attend_with_cache(q.clone(), k_new.clone(), v_new.clone(), k_want, v_want, pos)
    what = f"attend_with_cache(q [{hq}, {t}, {d}], k_new [{hkv}, {t}, {d}], caches [{hkv}, {max_len}, {d}], pos={pos})"

    def fingerprint(arg: object) -> object:   # the caches are meant to change; q, k_new, v_new are not
        if arg is k_cache or arg is v_cache:
            return "cache"
        return arg.detach().clone().numpy().tobytes() if isinstance(arg, torch.Tensor) else repr(arg)

    got = call_student(_attend, q, k_new, v_new, k_cache, v_cache, pos, name="attend_with_cache",
                       fingerprint=fingerprint)
    check_true(isinstance(got, torch.Tensor), f"{what} must return a torch tensor [Hq, T, D], got "
               f"{type(got).__name__}")
    check_true(tuple(got.shape) == (hq, t, d), f"{what} must return a torch tensor [Hq, T, D] = {[hq, t, d]}, got "
               f"shape {list(got.shape)}")
    check_true(got.dtype == q.dtype, f"{what}: the output has dtype {got.dtype}; return it with the dtype of q "
               f"({q.dtype})")
    for name, cache, ref in (("k_cache", k_cache, k_want), ("v_cache", v_cache, v_want)):
        if cache.dtype != ref.dtype or cache.shape != ref.shape or not bool(_same(cache, ref).all()):
            bad = sorted({int(s) for s in torch.nonzero((~_same(cache, ref)).any(dim=2))[:, 1]})
            check_true(False, f"{what}: write k_new and v_new into the caches in place at positions pos .. pos+T-1 "
                       f"= {pos} .. {pos + t - 1}, and leave every other slot as it was; {name} differs from the "
                       f"expected one at positions {bad[:8]}")
    tol = 1e-10 if q.dtype == torch.float64 else 1e-5
    check_array(got.detach().numpy(), want.numpy(), rtol=tol, atol=tol, name=f"(a case built to check: {rule}) the output of {what}")


_RULES = {"scale": "the scores are q . k / sqrt(D), softmax over the keys, then the weighted sum of the values",
          "gqa": "grouped-query attention: query head h reads KV head h // (Hq // Hkv)",
          "causal": "query t sits at position pos + t and attends to cached positions 0 .. pos + t (causal inside "
                    "the chunk)",
          "stale": "the slots after pos + T - 1 hold stale values: never read them"}


def _isolating_attend_cases(d: int, pos: int, t: int, seeds: list[int], hidden: bool) -> None:
    """One case per property, each passing for every answer that gets the properties before it right."""
    def run(label: str, hq: int, hkv: int, t: int, max_len: int, pos: int, seed: int, rule: str,
            dtype: torch.dtype = torch.float32, cache_dtype: torch.dtype | None = None) -> None:
        with case(label, show=lambda: f"Hq={hq} Hkv={hkv} T={t} D={d} max_len={max_len} pos={pos}, q {dtype}, "
                  f"caches {cache_dtype or dtype}", hidden=hidden):
            _check_attend(hq, hkv, t, d, max_len, pos, seed, rule, dtype, cache_dtype)

    run("one decode query, as many query as KV heads, a full cache", 2, 2, 1, pos + 1, pos, seeds[0], _RULES["scale"])
    run("one decode query, 2 query heads per KV head, a full cache", 4, 2, 1, pos + 1, pos, seeds[1], _RULES["gqa"])
    run("a prefill chunk after a cached prefix, the cache full after it", 2, 2, t, pos + t, pos, seeds[2],
        _RULES["causal"])
    run("a decode query with stale slots after it", 2, 2, 1, pos + 6, pos, seeds[3], _RULES["stale"])
    run("a prefill chunk with stale slots after it", 4, 2, t, pos + t + 5, pos, seeds[4], _RULES["stale"])
    run("a float64 decode query", 4, 2, 1, pos + 3, pos, seeds[5], _RULES["scale"], torch.float64)
    with case("a float64 prefill chunk whose scores are all near 1000 (exp overflows unless the max is subtracted)",
              show=lambda: f"Hq=4 Hkv=2 T={t} D={d} max_len={pos + t + 2} pos={pos}, every score 1000 + N(0, 1)",
              hidden=hidden):
        _check_attend(4, 2, t, d, pos + t + 2, pos, seeds[5] + 1, _RULES["scale"], torch.float64, offset=1000.0)
    run("float32 queries over a float16 cache (compute in q's dtype)", 4, 2, t, pos + t + 1, pos, seeds[4] + 1,
        "return it with the dtype of q; compute in q's dtype", torch.float32, torch.float16)


def _check_attend_errors(hidden: bool) -> None:
    """pos + T > max_len, and shapes that disagree, raise ValueError."""
    q, k_new, v_new, k_cache, v_cache = _attend_inputs(4, 2, 3, 8, 10, 0, 0)
    with case("pos + T > max_len", show="q [4, 3, 8], caches [2, 10, 8], pos=8", hidden=hidden):
        err = check_raises(ValueError, _attend, q, k_new, v_new, k_cache, v_cache, 8,
                           name="attend_with_cache(..., pos=8) with T=3 and max_len=10 (the tokens do not fit)")
        check_true("10" in str(err), f"attend_with_cache raised ValueError({str(err)!r}) when pos + T > max_len; "
                   "the message names max_len (its value, 10), so the caller knows how large the cache is")
    g = torch.Generator().manual_seed(7)
    wide = torch.randn(2, 4, 8, generator=g)   # T = 4: one token more than q
    bad = {"k_new with one token fewer than q": (q, k_new[:, :2], v_new, k_cache, v_cache),
           "k_new with one token more than q": (q, wide, v_new, k_cache, v_cache),
           "v_new with one token fewer than q": (q, k_new, v_new[:, :2], k_cache, v_cache),
           "v_new with one token more than q": (q, k_new, wide, k_cache, v_cache),
           "v_cache shorter than k_cache": (q, k_new, v_new, k_cache, v_cache[:, :9]),
           "v_cache longer than k_cache": (q, k_new, v_new, k_cache, torch.cat([v_cache, v_cache[:, :1]], dim=1)),
           "caches with a larger D than q and k_new": (q[:, :, :4], k_new[:, :, :4], v_new[:, :, :4], k_cache,
                                                       v_cache),
           "caches with a smaller D than q and k_new": (q, k_new, v_new, k_cache[:, :, :4], v_cache[:, :, :4]),
           "Hq = 3 query heads for Hkv = 2 KV heads": (q[:3], k_new, v_new, k_cache, v_cache),
           "k_new with one KV head fewer than the caches": (q, k_new[:1], v_new, k_cache, v_cache),
           "v_new with one KV head fewer than the caches": (q, k_new, v_new[:1], k_cache, v_cache),
           "k_new and v_new both with one KV head, the caches with two": (q, k_new[:1], v_new[:1], k_cache, v_cache),
           "k_new with a smaller D than q": (q, k_new[:, :, :4], v_new, k_cache, v_cache),
           "v_new with a smaller D than q": (q, k_new, v_new[:, :, :4], k_cache, v_cache),
           "v_cache with a smaller D than k_cache": (q, k_new, v_new, k_cache, v_cache[:, :, :4]),
           "v_cache with one KV head fewer than k_cache": (q, k_new, v_new, k_cache, v_cache[:1])}
    for label, args in bad.items():
        with case(label, show=lambda: ", ".join(f"{list(a.shape)}" for a in args), hidden=hidden):
            check_raises(ValueError, _attend, *args, 0, name=f"attend_with_cache with {label} (the shapes disagree)")


_isolating_attend_cases(8, 5, 3, [0, 1, 2, 3, 4, 5], hidden=False)
_check_attend_errors(hidden=False)
_check_attend(8, 2, 4, 16, 40, 17, 6, "all the rules at once")
### BEGIN HIDDEN TESTS
_rng = grading_rng(1)


def _ri(lo: int, hi: int) -> int:
    """A random int in [lo, hi]."""
    return int(_rng.integers(lo, hi + 1))


_isolating_attend_cases(_ri(2, 6) * 4, _ri(1, 30), _ri(2, 7), [_ri(0, 1 << 30) for _ in range(6)], hidden=True)
_check_attend_errors(hidden=True)
with case("a prefill from position 0 (an empty cache)", show="pos=0"):
    _check_attend(4, 2, _ri(2, 9), 16, 24, 0, _ri(0, 1 << 30), "all the rules at once")
for _trial in range(4):
    _hkv = _ri(1, 3)
    _hq, _t, _pos = _hkv * _ri(1, 4), _ri(1, 8), _ri(0, 40)
    _len = _pos + _t + _ri(0, 6)
    with case(f"random shapes #{_trial}", show=lambda: f"Hq={_hq} Hkv={_hkv} T={_t} max_len={_len} pos={_pos}"):
        _check_attend(_hq, _hkv, _t, 8 * _ri(1, 4), _len, _pos, _ri(0, 1 << 30), "all the rules at once")
### END HIDDEN TESTS

# %% [markdown]
# ## 3. Paging and reuse: vLLM's PagedAttention
#
# A contiguous cache reserves `max_len` tokens for every sequence, yet a request's length is unknown until it
# ends. Most of the reservation sits empty, and that empty memory is memory no other request can use. Take the
# lengths (prompt + output) of a mixed workload and count the waste of each layout:

# %%
from infopt.llm.paged import BlockAllocator, OutOfBlocks, PagedKVCache, append_slot, fork_table, free_table
from infopt.llm.paged import measure_waste, memory_waste
from infopt.llm.traces import poisson_trace

workload = poisson_trace(64, rate_per_s=20.0, seed=1, prompt_len=(16, 160), output_len=(8, 160))
seq_lengths = [len(r.prompt_ids) + r.max_new_tokens for r in workload]
MAX_LEN = 512
for bs in (8, 16, 32):
    rep = memory_waste(seq_lengths, MAX_LEN, bs, per_token)
    print(f"block_size {bs:>2}: paged wastes {rep.paged_waste_fraction:5.1%} of what it allocates, contiguous "
          f"{rep.contiguous_waste_fraction:5.1%}; paged waste / contiguous waste = {rep.paged_over_contiguous:.3f}")
measured = measure_waste(TARGET_CONFIG, seq_lengths[:4], MAX_LEN, 16)
computed = memory_waste(seq_lengths[:4], MAX_LEN, 16, per_token)
print("measured in real caches equals the count:", measured == computed)
rep = memory_waste(seq_lengths, MAX_LEN, 16, per_token)
fig = go.Figure([go.Bar(name="used", x=["contiguous", "paged (16)"], y=[rep.used_bytes / 2**20] * 2),
                 go.Bar(name="wasted", x=["contiguous", "paged (16)"],
                        y=[rep.contiguous_waste_bytes / 2**20, rep.paged_waste_bytes / 2**20])])
fig.update_layout(barmode="stack", title=f"KV memory of {len(seq_lengths)} sequences (max_len {MAX_LEN})",
                  yaxis_title="MiB", height=340)
fig.show()

# %% [markdown]
# **Paging** (Kwon et al., *Efficient Memory Management for Large Language Model Serving with PagedAttention*,
# SOSP 2023) borrows the operating system's answer. The cache is a pool of fixed-size **blocks** (vLLM's default:
# 16 tokens). Each sequence has a **block table**, a list of physical block numbers: token i lives in block
# `table[i // block_size]`, slot `i % block_size`. A sequence takes a block when it crosses a block boundary, so
# the waste is less than one block per sequence.
#
# Blocks also make **sharing** cheap. Parallel sampling (n answers to one prompt), beam search and a system prompt
# common to many requests hold the same prefix; with a **reference count** per block, the sequences share its blocks
# instead of copying them. When one of them writes into a shared block (the partly filled last one), it first
# copies that block: **copy-on-write**.
#
# `BlockAllocator` is the pool: `allocate()` hands out the lowest-numbered free block (ref count 1), or an `OutOfBlocks`
# error when none is free, `fork(b)` adds a reference, `free(b)` drops one (the block returns to the pool at 0).

# %%
pool = BlockAllocator(8)
parent = [pool.allocate(), pool.allocate()]          # a 20-token prompt in blocks of 16: 2 blocks
child = fork_table(pool, parent)                     # a second sample of the same prompt shares them
print("tables:", parent, child, " ref counts:", [pool.ref_count(b) for b in range(4)], " free:", pool.num_free)
child, copy = append_slot(pool, child, 20, 16)       # the child writes token 20 into shared block 1
print("after the child's append:", parent, child, " copy (src, dst):", copy,
      " ref counts:", [pool.ref_count(b) for b in range(4)])

# %% [markdown]
# The child's next token goes into block 1, which the parent also reads: the child takes block 2, drops its
# reference to block 1, and the caller copies block 1's K/V into block 2 (on a GPU, vLLM's `copy_blocks` kernel).
#
# ### Exercise 2 — the block allocator's append, with copy-on-write (2 points)
#
# Write `append_slot(allocator, table, num_tokens, block_size)`: make room in a sequence's block table for its next
# token, whose index is `num_tokens` (the count already stored; the table holds `ceil(num_tokens / block_size)`
# blocks). `allocator` is the `BlockAllocator` above; `allocator.ref_count(b)` says how many tables hold block `b`.
#
# Here is the contract, not the recipe: working out when to take a block and when to copy one is the exercise.
#
# - After the call the token has its slot in the last block of the returned table, and writing it there must not
#   change what any other table reads.
# - The tokens already stored stay where the returned table says they are: same positions, and same values once the
#   caller has made the copy you return.
# - Take a block only when the token needs one, and only from `allocator.allocate()`; when this table stops holding
#   a block, drop this table's reference with `allocator.free`. The reference counts then match the tables.
# - `copy` is `(src, dst)` when the caller must copy block `src` into block `dst` before writing, else `None`.
# - Return a tuple `(new_table, copy)`, where `new_table` is a new list; the caller's list stays as it was.
# - When no block is free, `allocator.allocate()` raises `OutOfBlocks`: let it propagate, and leave the allocator
#   and the table unchanged.
# - Raise `ValueError` when `len(table)` is not `ceil(num_tokens / block_size)`.
#
# Do not call `infopt.llm.paged.append_slot` or `copy_on_write` (the library's answer). The tests compare the
# returned table, the copy and every block's reference count with the library's on random pools, tables and forks.

# %% solution=true grade_id="append_slot"
def append_slot(allocator: BlockAllocator, table: list[int], num_tokens: int,
                block_size: int) -> tuple[list[int], tuple[int, int] | None]:
    """Room for token `num_tokens`: a new block at a boundary, else copy-on-write of a shared last block."""
    ### BEGIN SOLUTION
    need = -(-num_tokens // block_size)
    if len(table) != need:
        raise ValueError(f"{num_tokens} tokens in blocks of {block_size} need {need} blocks; the table has "
                         f"{len(table)}")
    if num_tokens % block_size == 0:
        return list(table) + [allocator.allocate()], None
    last = table[-1]
    if allocator.ref_count(last) > 1:
        fresh = allocator.allocate()
        allocator.free(last)
        return list(table[:-1]) + [fresh], (last, fresh)
    return list(table), None
    ### END SOLUTION


# %% grade_id="append_slot_test" points=2
from infopt.grading import GradingError, call_student, case, forbidding, grading_rng
from infopt.llm import paged_blocks as _blocks_ref

# While your function runs, the library's append and copy-on-write raise: write them yourself.
_append = forbidding(append_slot, "infopt.llm.paged_blocks:append_slot", "infopt.llm.paged_blocks:copy_on_write",
                     exercise="the block allocator's append")


def _pool(num_blocks: int, held: list[int], shared: dict[int, int]) -> BlockAllocator:
    """A pool where the blocks in `held` are allocated (other sequences' and this table's) and block b has
    shared[b] extra references (forks)."""
    pool = BlockAllocator(num_blocks)
    taken = [pool.allocate() for _ in range(num_blocks)]
    for b in taken:
        if b not in held:
            pool.free(b)
    for b, extra in shared.items():
        for _ in range(extra):
            pool.fork(b)
    return pool


def _refs(pool: BlockAllocator) -> list[int]:
    return [pool.ref_count(b) for b in range(pool.num_blocks)]


def _drain(pool: BlockAllocator) -> list[int]:
    """The blocks the pool still hands out, in order (it is used up)."""
    out = []
    while pool.num_free:
        out.append(pool.allocate())
    return out


def _check_append(num_blocks: int, held: list[int], shared: dict[int, int], table: list[int], num_tokens: int,
                  block_size: int) -> None:
    """Your (table, copy), the pool's ref counts and the blocks it still hands out after the call against the
    reference's, on twin pools."""
    pool, ref_pool = _pool(num_blocks, held, shared), _pool(num_blocks, held, shared)
    before = _refs(pool)
    want = _blocks_ref.append_slot(ref_pool, list(table), num_tokens, block_size)
    what = f"append_slot(table={table}, num_tokens={num_tokens}, block_size={block_size})"
    got = call_student(_append, pool, table, num_tokens, block_size, name="append_slot",
                       fingerprint=lambda a: "pool" if a is pool else repr(a))
    check_true(isinstance(got, tuple) and len(got) == 2, f"{what} must return a tuple (new_table, copy), got "
               f"{type(got).__name__}" + (f" of length {len(got)}" if isinstance(got, (tuple, list)) else ""))
    new, copy = got
    check_true(isinstance(new, list) and all(isinstance(b, int) for b in new), f"{what} must return a tuple "
               f"(new_table, copy) whose new_table is a list of ints, got {new!r}")
    check_true(copy is None or (isinstance(copy, tuple) and len(copy) == 2 and all(
        isinstance(b, int) and not isinstance(b, bool) for b in copy)), f"{what}: copy is (src, dst), a tuple of "
        f"two block numbers (ints), or None; you returned {copy!r}")
    last = table[-1] if table else None
    if num_tokens % block_size == 0:
        check_true(copy is None, f"{what}: the last block is full (num_tokens % block_size == 0), so the token goes "
                   f"into a new block and no copy is needed, even if the full last block is shared; you returned "
                   f"copy {copy!r}")
        check_true(len(new) == len(table) + 1 and new[:-1] == table,
                   f"{what}: when num_tokens % block_size == 0, take a block and append it to the table: expected "
                   f"{want[0]}, got {new}")
        check_true(new == want[0], f"{what}: take the new block with allocator.allocate() (it hands out the "
                   f"lowest-numbered free block, {want[0][-1]}); you appended {new[-1]}")
    elif before[last] > 1:
        check_true(copy is not None, f"{what}: the last block {last} is shared (ref count {before[last]}) and the "
                   f"next token goes into it: copy-on-write (a fresh block, the copy (src, dst)); you returned copy "
                   f"None and table {new}")
        check_true(copy == want[1] or copy == want[1][::-1],
                   f"{what}: copy-on-write returns the copy (src, dst) = (shared block, fresh block) = {want[1]}; "
                   f"got {copy!r} with table {new}")
        check_true(copy == want[1], f"{what}: the copy is (src, dst) = (last, fresh) = {want[1]}: the shared block "
                   f"is copied into the fresh one; you returned {copy!r}")
        check_true(new == want[0], f"{what}: after copy-on-write the fresh block replaces the shared one at the end "
                   f"of the table: expected {want[0]}, got {new}")
        now = pool.ref_count(last)
        check_true(now == before[last] - 1, f"{what}: drop this table's reference to the shared block with "
                   f"allocator.free(last): block {last}'s ref count should go from {before[last]} to "
                   f"{before[last] - 1}, it is {now}")
    else:
        check_true(copy is None and new == table, f"{what}: the last block {last} is exclusively owned (ref count 1) "
                   f"and has room: the table stays as it is and the copy is None; you returned ({new}, {copy!r})")
    check_true(isinstance(new, list) and new is not table, f"{what}: new_table is a new list, not the caller's")
    check_equal(_refs(pool), _refs(ref_pool), name=f"every block's ref count after {what} (take blocks with "
                "allocator.allocate(), drop references with allocator.free())")
    left, ref_left = _drain(pool), _drain(ref_pool)
    check_true(left == ref_left, f"{what}: take the new block with allocator.allocate(): after your call the pool "
               f"would still hand out blocks {left}, where it should hand out {ref_left} (a block taken another way "
               "is still free, and would be given to two sequences)")


def _check_out_of_blocks(num_blocks: int, table: list[int], shared: dict[int, int], num_tokens: int,
                         block_size: int) -> None:
    """A full pool: OutOfBlocks comes out, and the pool (and the table) are as they were."""
    pool = _pool(num_blocks, list(range(num_blocks)), shared)
    before, saved = _refs(pool), list(table)
    what = f"append_slot(table={table}, num_tokens={num_tokens}, block_size={block_size}) with no free block"
    try:
        _append(pool, table, num_tokens, block_size)
    except OutOfBlocks:
        pass
    except GradingError:
        raise
    except Exception as err:  # noqa: BLE001 (the student's error, reported)
        check_true(False, f"{what}: allocator.allocate() raises OutOfBlocks; let it propagate (you raised "
                   f"{type(err).__name__}: {err})")
    else:
        check_true(False, f"{what}: allocator.allocate() raises OutOfBlocks; let it propagate (your call returned)")
    check_true(_refs(pool) == before and table == saved,
               f"{what}: on OutOfBlocks leave the allocator and the table unchanged (allocate before you free): the "
               f"ref counts went from {before} to {_refs(pool)}")


def _check_tight(num_blocks: int, table: list[int], shared: dict[int, int], num_tokens: int, block_size: int,
                 free: int) -> None:
    """A pool with exactly `free` free blocks where the token still fits (it needs no block, or the one that is
    free): no OutOfBlocks, and the same result as with a roomy pool."""
    spare = [b for b in range(num_blocks - 1, -1, -1) if b not in table][:free]
    held = [b for b in range(num_blocks) if b not in spare]
    what = (f"append_slot(table={table}, num_tokens={num_tokens}, block_size={block_size}) with {free} free "
            f"block{'s' if free != 1 else ''}")
    try:
        _append(_pool(num_blocks, held, shared), list(table), num_tokens, block_size)
    except OutOfBlocks:
        if free == 0:
            check_true(False, f"{what}: the last block is exclusively owned (ref count 1) and has room, so the "
                       "token needs no block and nothing may be taken; you raised OutOfBlocks")
        check_true(False, f"{what}: the token needs one new block and one is free, so take that one; you raised "
                   "OutOfBlocks")
    except Exception:  # noqa: BLE001 (reported by _check_append below, with the input)
        pass
    _check_append(num_blocks, held, shared, table, num_tokens, block_size)


def _check_bad_length(pool_blocks: int, held: list[int], shared: dict[int, int], tab: list[int], n: int,
                      bs: int) -> None:
    """A table whose length is not ceil(num_tokens / block_size): ValueError, with the pool and the caller's list as
    they were."""
    pool = _pool(pool_blocks, held, shared)
    before, caller, saved = _refs(pool), list(tab), list(tab)
    check_raises(ValueError, _append, pool, caller, n, bs,
                 name=f"append_slot(table={tab}, num_tokens={n}, block_size={bs}) (len(table) is not "
                      f"ceil(num_tokens / block_size))")
    check_true(caller == saved, f"append_slot(table={tab}, num_tokens={n}, block_size={bs}) raised ValueError but "
               f"changed its input (the caller's table) to {caller}")
    check_true(_refs(pool) == before, f"append_slot(table={tab}, num_tokens={n}, block_size={bs}) raised "
               f"ValueError, but first changed the pool: the ref counts went from {before} to {_refs(pool)} "
               "(check the table before you allocate or free anything)")


def _append_cases(r: np.random.Generator, hidden: bool, bs: int, k: int) -> None:
    """Every situation for blocks of `bs` tokens and a table of `k` blocks, in an order where each case passes for
    answers right on the ones before."""
    n_blocks = k + 3 + int(r.integers(3, 8))
    perm = [int(b) for b in r.permutation(n_blocks)]
    table = sorted(perm[:k], reverse=True)    # a table whose blocks are not the lowest free ones, not in order
    held = perm[:k + 3]                       # three more blocks held by other sequences
    others = perm[k:k + 3]
    inner = (k - 1) * bs + int(r.integers(1, bs)) if bs > 1 else None   # the last block partly filled
    full = k * bs                                                        # the last block full

    def run(label: str, held: list[int], shared: dict[int, int], table: list[int], n: int) -> None:
        with case(label, show=lambda: f"pool of {n_blocks} blocks, held {sorted(held)}, extra refs {shared}, "
                  f"table {table}, num_tokens={n}, block_size={bs}", hidden=hidden):
            _check_append(n_blocks, held, shared, table, n, bs)

    def tight(label: str, shared: dict[int, int], n: int, free: int) -> None:
        with case(label, show=lambda: f"pool of {n_blocks} blocks, {free} free, extra refs {shared}, table "
                  f"{table}, num_tokens={n}, block_size={bs}", hidden=hidden):
            _check_tight(n_blocks, table, shared, n, bs, free)

    run("a full last block, exclusively owned", held, {}, table, full)
    run("the first token of a sequence (an empty table)", held[k:], {}, [], 0)
    run("a full last block shared with a fork", held, {table[-1]: 1}, table, full)
    if inner is not None:
        run("a partly filled last block, exclusively owned", held, {}, table, inner)
        run("a partly filled last block shared with a fork", held, {table[-1]: 1}, table, inner)
        run("a partly filled last block shared with two forks", held, {table[-1]: 2, table[0]: 1}, table, inner)
        if k > 1:
            run("a partly filled exclusive last block after shared earlier blocks", held, {table[0]: 1}, table, inner)
        tight("a partly filled exclusive last block, no free block", {}, inner, 0)
        tight("copy-on-write with exactly one free block", {table[-1]: 1}, inner, 1)
    tight("a full last block with exactly one free block", {}, full, 1)
    bad = []   # (label, table, num_tokens): lengths off by one and two blocks, both ways, inside and at a boundary
    for d in (1, 2):
        longer = table + others[:d]
        bad.append((f"a table with {d} block(s) too many, at a block boundary", longer, full))
        if inner is not None:
            bad.append((f"a table with {d} block(s) too many", longer, inner))
        if k - d >= 0:
            if inner is not None:
                bad.append((f"a table with {d} block(s) too few", table[:k - d], inner))
            bad.append((f"a table with {d} block(s) too few, at a block boundary", table[:k - d], full))
    bad += [("an empty table for tokens already stored", [], int(r.integers(1, bs + 1))),
            ("a one-block table for a sequence with no token yet", table[-1:], 0),
            ("a negative token count (ceil(num_tokens / block_size) < 0)", [], -int(r.integers(bs, 3 * bs + 1)))]
    for label, tab, n in bad:
        with case(label, show=lambda: f"table {tab}, num_tokens={n}, block_size={bs}", hidden=hidden):
            _check_bad_length(n_blocks, held, {table[-1]: 1}, tab, n, bs)
    with case("no free block, at a block boundary", show=lambda: f"table {table}, num_tokens={full}", hidden=hidden):
        _check_out_of_blocks(n_blocks, table, {}, full, bs)
    with case("no free block, the first token of a sequence", show=lambda: "table [], num_tokens=0", hidden=hidden):
        _check_out_of_blocks(n_blocks, [], {}, 0, bs)
    if inner is not None:
        for forks in (1, 2):
            with case(f"no free block, copy-on-write of a last block shared with {forks} fork(s)",
                      show=lambda: f"table {table}, last block shared, num_tokens={inner}", hidden=hidden):
                _check_out_of_blocks(n_blocks, table, {table[-1]: forks}, inner, bs)


def _check_growth(r: np.random.Generator, hidden: bool) -> None:
    """Parallel sampling, call after call on one pool: a sequence grows a token at a time, is forked partway into a
    block, and both copies grow on. At every call your (table, copy) and the ref counts equal the reference's on a
    twin pool (a block your function handed out earlier is shared now like any other)."""
    bs = int(r.integers(2, 9))
    fork_at = bs + int(r.integers(1, bs))   # the fork shares a partly filled second block
    pool, ref = BlockAllocator(8), BlockAllocator(8)
    mine, theirs, count = {"a": []}, {"a": []}, {"a": 0}
    with case(f"a sequence grown one token at a time, forked after {fork_at} tokens, both grown on",
              show=lambda: f"block_size={bs}, a pool of 8 blocks", hidden=hidden):
        for step in range(fork_at + 3):
            if step == fork_at:
                for b in theirs["a"]:
                    ref.fork(b)
                for b in mine["a"]:
                    pool.fork(b)
                mine["b"], theirs["b"], count["b"] = list(mine["a"]), list(theirs["a"]), count["a"]
            for name in sorted(mine):
                what = (f"append_slot(table={mine[name]}, num_tokens={count[name]}, block_size={bs}) for sequence "
                        f"{name!r} after {step} steps")
                want = _blocks_ref.append_slot(ref, theirs[name], count[name], bs)
                got = call_student(_append, pool, mine[name], count[name], bs, name="append_slot",
                                   fingerprint=lambda a: "pool" if a is pool else repr(a))
                check_true(isinstance(got, tuple) and len(got) == 2, f"{what} must return a tuple (new_table, copy)")
                if want[1] is not None:
                    check_true(got[1] is not None, f"{what}: its last block is shared (ref count "
                               f"{ref.ref_count(theirs[name][-1])}) and the next token goes into it: copy-on-write "
                               f"(a fresh block, the copy (src, dst)); you returned copy None")
                if count[name] % bs == 0:
                    why = "the last block is full (or there is none): take a block and append it to the table"
                elif want[1] is None:
                    why = (f"the last block {theirs[name][-1]} is exclusively owned (ref count 1) and has room: the "
                           "table stays as it is and the copy is None")
                else:
                    why = "copy-on-write (a fresh block, the copy (src, dst)) replaces the shared last block"
                check_true((list(got[0]), got[1]) == (want[0], want[1]), f"{what}: {why}; expected {want}, got {got}")
                check_equal(_refs(pool), _refs(ref), name=f"every block's ref count after {what}")
                mine[name], theirs[name] = list(got[0]), want[0]
                count[name] += 1


def _append_plan(r: np.random.Generator) -> list[tuple[int, int]]:
    """(block size, table length) for each round: one-token blocks, a one-block table of 9 to 16 tokens, blocks of
    17 to 64 tokens (vLLM's sizes go to 32; sizes the lesson's 16 never shows) and a usual pair, in a random
    order."""
    plan = [(1, int(r.integers(1, 5))), (int(r.integers(9, 17)), 1), (int(r.integers(17, 65)), int(r.integers(2, 6))),
            (int(r.integers(2, 9)), int(r.integers(2, 6)))]
    return [plan[i] for i in r.permutation(len(plan))]


_append_cases(np.random.default_rng(0), hidden=False, bs=4, k=3)
_check_append(8, [0, 1, 2], {1: 1}, [0, 1], 20, 16)       # the example above
_check_growth(np.random.default_rng(0), hidden=False)
### BEGIN HIDDEN TESTS
_rng = grading_rng(2)
for _bs, _k in _append_plan(_rng):
    _append_cases(_rng, hidden=True, bs=_bs, k=_k)
_check_growth(_rng, hidden=True)
### END HIDDEN TESTS

# %% [markdown]
# Reading through the table is the other half. A decode step's query attends to its sequence's tokens, which are
# scattered over the pool; vLLM's PagedAttention kernel follows `block_tables` and `seq_lens` instead of
# assuming one contiguous range. `PagedKVCache` stores K and V per layer as `[num_blocks, Hkv, block_size, D]` and
# does the same for a batch. A paged generation gives the same tokens as the contiguous one:

# %%
paged_run = generate(target, gen_prompt, 64, cache="paged", block_size=16, stop_at_eos=False)
print("paged cache, same tokens as the contiguous cache:", paged_run.tokens == runs["contiguous"].tokens[:64])

# %% [markdown]
# ### Exercise 3 — attention through a block table (2 points)
#
# Write `paged_attention(q, k_blocks, v_blocks, table, context_len)`: the attention output of ONE decode query
# `q` `[Hq, D]` (the token at position `context_len - 1`, after RoPE; its own K and V are already stored) over its
# sequence's tokens `0 .. context_len - 1`. Their keys and values live in the pool `k_blocks`, `v_blocks`
# `[num_blocks, Hkv, block_size, D]`.
#
# 1. Token i is in physical block `table[i // block_size]`, slot `i % block_size`; the table's blocks are in any
#    order anywhere in the pool, and the table may hold spare blocks after the ones the context uses (vLLM pads
#    its block tables): `context_len` says how many tokens there are.
# 2. The query attends to all of tokens `0 .. context_len - 1`, its own token included.
# 3. The slots after token `context_len - 1` in the last block are stale (an earlier owner's): never read them.
# 4. Grouped-query attention as in exercise 1: query head h reads KV head `h // (Hq // Hkv)`.
# 5. The scores are `q · k / sqrt(D)`, softmax over the keys, then the weighted sum of the values.
# 6. Return a torch tensor `[Hq, D]`.
#
# Do not change the inputs. Do not call `infopt.llm.paged.paged_attention`, `gather_kv`, `PagedKVCache`,
# `infopt.llm.model.grouped_attention` or `infopt.llm.kv_cache.attend_with_cache`. The tests compare with the
# library's reference on random pools, shuffled block tables and context lengths (float32 to 1e-5; float64, with
# scores far from 0, to 1e-10).

# %% solution=true grade_id="paged_attention"
def paged_attention(q: torch.Tensor, k_blocks: torch.Tensor, v_blocks: torch.Tensor, table: list[int],
                    context_len: int) -> torch.Tensor:
    """One decode query [Hq, D] attending to its context_len tokens, read through the block table."""
    ### BEGIN SOLUTION
    hq, d = q.shape
    _, hkv, block_size, _ = k_blocks.shape
    idx = torch.arange(context_len)
    blocks = torch.tensor(table, dtype=torch.long)[idx // block_size]
    slots = idx % block_size
    keys = k_blocks[blocks, :, slots].transpose(0, 1)               # [Hkv, context_len, D]
    values = v_blocks[blocks, :, slots].transpose(0, 1)
    group = hq // hkv
    keys = keys.repeat_interleave(group, dim=0).to(q.dtype)          # [Hq, context_len, D]
    values = values.repeat_interleave(group, dim=0).to(q.dtype)
    scores = (keys @ q[:, :, None])[:, :, 0] / math.sqrt(d)         # [Hq, context_len]
    return (torch.softmax(scores, dim=-1)[:, None, :] @ values)[:, 0, :]
    ### END SOLUTION


# %% grade_id="paged_attention_test" points=2
from infopt.grading import call_student, case, forbidding, grading_rng
from infopt.kernels import ATTENTION_ROUTES
from infopt.llm import paged as _paged_ref

# While your function runs, the library's paged attention, its gather and the attention helpers raise.
# So do the other units' attention functions that compute the same answer (unit 10's kernels and references).
_paged = forbidding(paged_attention, "infopt.llm.paged:paged_attention", "infopt.llm.paged:gather_kv",
                    "infopt.llm.paged:PagedKVCache", "infopt.llm.model:grouped_attention",
                    "infopt.llm.kv_cache:attend_with_cache", *ATTENTION_ROUTES,
                    exercise="attention through a block table")


def _check_paged(hq: int, hkv: int, d: int, block_size: int, num_blocks: int, table: list[int], context_len: int,
                 seed: int, rule: str, dtype: torch.dtype = torch.float32, offset: float = 0.0) -> None:
    """Your output against the reference on a pool whose unused blocks and stale slots hold NaN (reading them, even
    masked, spoils the output). With `offset`, every score is offset + a normal draw (scores far from 0)."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(hq, d, generator=g, dtype=dtype)
    k_blocks = torch.full((num_blocks, hkv, block_size, d), float("nan"), dtype=dtype)
    v_blocks = torch.full((num_blocks, hkv, block_size, d), float("nan"), dtype=dtype)
    for i in range(context_len):   # the sequence's own tokens: ordinary values
        b, s = table[i // block_size], i % block_size
        k_blocks[b, :, s] = torch.randn(hkv, d, generator=g, dtype=dtype)
        v_blocks[b, :, s] = torch.randn(hkv, d, generator=g, dtype=dtype)
        if offset:
            k_blocks[b, :, s, 0] = 1.0
    if offset:
        q[:, 0] = offset * math.sqrt(d)
    want = _paged_ref.paged_attention(q.clone(), k_blocks.clone(), v_blocks.clone(), list(table), context_len)
    what = (f"paged_attention(q [{hq}, {d}], blocks [{num_blocks}, {hkv}, {block_size}, {d}], table={table}, "
            f"context_len={context_len})")
    got = call_student(_paged, q, k_blocks, v_blocks, list(table), context_len, name="paged_attention")
    check_true(isinstance(got, torch.Tensor), f"{what} must return a torch tensor [Hq, D], got {type(got).__name__}")
    check_true(tuple(got.shape) == (hq, d), f"{what} must return a torch tensor [Hq, D] = {[hq, d]} (one query, no "
               f"token axis), got shape {list(got.shape)}")
    if context_len > 1:
        shorter = _paged_ref.paged_attention(q, k_blocks, v_blocks, list(table), context_len - 1)
        check_true(not torch.allclose(got, shorter, rtol=1e-5, atol=1e-5),
                   f"{what}: your output is the attention over tokens 0 .. {context_len - 2}; the query attends to "
                   f"all of tokens 0 .. context_len - 1, its own token included")
    tol = 1e-10 if dtype == torch.float64 else 1e-5
    check_array(got.detach().numpy(), want.numpy(), rtol=tol, atol=tol, name=f"(a case built to check: {rule}) the output of {what}")


_PAGED_RULES = {
    "scale": "the scores are q . k / sqrt(D), softmax over the keys, then the weighted sum of the values",
    "table": "token i is in physical block table[i // block_size], slot i % block_size (the pool is "
             "[num_blocks, Hkv, block_size, D])",
    "gqa": "grouped-query attention: query head h reads KV head h // (Hq // Hkv)",
    "stale": "the slots after token context_len - 1 in the last block are stale: never read them"}


def _isolating_paged_cases(r: np.random.Generator, hidden: bool) -> None:
    """One case per property, each passing for every answer that gets the properties before it right."""
    d, bs, n = 4 * int(r.integers(2, 5)), int(r.integers(2, 7)), int(r.integers(2, 5))
    pool = n + int(r.integers(3, 7))
    shuffled = [int(b) for b in r.permutation(pool)[:n]]
    while shuffled == sorted(shuffled) or shuffled[0] == 0:
        shuffled = [int(b) for b in r.permutation(pool)[:n]]
    part = (n - 1) * bs + int(r.integers(1, bs))

    def run(label: str, hq: int, hkv: int, num_blocks: int, table: list[int], ctx: int, rule: str) -> None:
        with case(label, show=lambda: f"Hq={hq} Hkv={hkv} D={d} block_size={bs} pool={num_blocks} table={table} "
                  f"context_len={ctx}", hidden=hidden):
            _check_paged(hq, hkv, d, bs, num_blocks, table, ctx, int(r.integers(1 << 30)), _PAGED_RULES[rule])

    run("blocks 0, 1, 2, ... in order, full, one KV head", int(r.integers(1, 4)), 1, n, list(range(n)), n * bs,
        "scale")
    run("a shuffled table in a larger pool, full blocks, 2 KV heads", 2, 2, pool, shuffled, n * bs, "table")
    run("a shuffled table, 2 query heads per KV head", 4, 2, pool, shuffled, n * bs, "gqa")
    run("a partly filled last block (stale slots after the context)", 2, 1, pool, shuffled, part, "stale")
    run("one token (context_len = 1)", 2, 2, pool, shuffled[:1], 1, "stale")
    spare = [b for b in range(pool) if b not in shuffled][:2]
    run("a block table longer than the context needs (two spare blocks after the last one used)", 2, 2, pool,
        shuffled + spare, part, "table")
    with case("a float64 query whose scores are all near 1000 (exp overflows unless the max is subtracted)",
              show=lambda: f"Hq=4 Hkv=2 D={d} block_size={bs} table={shuffled} context_len={part}, every score "
              "1000 + N(0, 1)", hidden=hidden):
        _check_paged(4, 2, d, bs, pool, shuffled, part, int(r.integers(1 << 30)), _PAGED_RULES["scale"],
                     torch.float64, offset=1000.0)


_isolating_paged_cases(np.random.default_rng(0), hidden=False)
_check_paged(8, 2, 16, 4, 12, [7, 2, 9], 10, 1, "all the rules at once")
### BEGIN HIDDEN TESTS
_rng = grading_rng(3)
_isolating_paged_cases(_rng, hidden=True)
for _trial in range(5):
    _hkv = int(_rng.integers(1, 4))
    _bs, _n = int(_rng.integers(1, 9)), int(_rng.integers(1, 6))
    _table = [int(b) for b in _rng.permutation(_n + 4)[:_n]]
    _ctx = int(_rng.integers((_n - 1) * _bs + 1, _n * _bs + 1))
    with case(f"random pool #{_trial}", show=lambda: f"table={_table} block_size={_bs} context_len={_ctx}"):
        _check_paged(_hkv * int(_rng.integers(1, 4)), _hkv, 8, _bs, _n + 4, _table, _ctx, int(_rng.integers(1 << 30)),
                     "all the rules at once")
### END HIDDEN TESTS

# %% [markdown]
# **Sharing a prompt.** `PagedKVCache.fork(parent, child)` gives a child sequence the parent's blocks (ref + 1
# each); the first write into the shared, partly filled last block copies it. `parallel_sampling_log` runs four
# continuations of one prompt that way (vLLM's parallel sampling, `n=4`) in small blocks of 4 tokens and logs the
# block tables of every step. Play it: the prompt's blocks are shared (dark), the last one is copied at the first
# write, and from then on each sequence grows its own blocks.

# %%
from infopt.llm.engine import parallel_sampling_log
from infopt.widgets.llm_view import block_table_view

share_prompt = tok.encode("    def __repr__(self):\n        return ")
sampling_log = parallel_sampling_log(target, share_prompt, n=4, max_new_tokens=12, block_size=4, num_blocks=40)
first, last = sampling_log.steps[0], sampling_log.steps[-1]
print(f"prompt of {len(share_prompt)} tokens; after the forks: {first.tables}")
print(f"after {len(sampling_log.steps)} steps: {last.tables}")
for seq, toks in sampling_log.outputs().items():
    print(f"   sequence {seq}:", repr(tok.decode(share_prompt[-10:] + toks)))
block_table_view(sampling_log)

# %% [markdown]
# **How the real systems do it.** vLLM's v0 engine had these very pieces: a `BlockAllocator` with reference
# counts, a `BlockSpaceManager` holding one `BlockTable` per sequence, `append_slots` returning the copy-on-write
# pairs, and the `copy_blocks` and `reshape_and_cache` kernels. vLLM v1 shares blocks through **automatic prefix
# caching** instead: a full block is found again by a hash of its tokens and its prefix
# (`KVCacheManager.get_computed_blocks`), so a system prompt is computed once for all requests. TensorRT-LLM pages
# its cache the same way (`KvCacheConfig(tokens_per_block=..., enable_block_reuse=True)` turns on the same reuse),
# and Hugging Face's continuous-batching path (`model.generate_batch`, `transformers.generation.continuous_batching`)
# holds a `PagedAttentionCache`.

# %% [markdown]
# ## 4. Batching: throughput against latency, tuned to an SLA
#
# Section 1 showed that a decode step of 16 sequences costs a small multiple of a step of one, far from 16 times
# it: the weights are read once either way. Serving many users is therefore about keeping many sequences in each
# step. Two ways:
#
# - **static batching** (what `generate` on a padded batch does): wait until B requests are there, run them
#   together until the longest one ends, then take the next B. Finished sequences sit idle in the batch, and a new
#   request waits for the whole batch to drain;
# - **continuous (in-flight) batching** (Orca, OSDI 2022; vLLM; TensorRT-LLM's in-flight batching): the batch is
#   re-formed at every step. A **scheduler step** retires finished sequences, admits waiting ones while blocks and
#   the batch limit allow, prefills them, and runs one decode token for every running sequence. When the paged
#   cache runs out of blocks, it **preempts** a running sequence: by **recompute** (drop its blocks; prefill its
#   prompt and output again later) or by **swap** (copy its blocks to CPU memory and back).
#
# The engines in `infopt.llm.engine` run both on the real tiny model and a seeded **Poisson trace** (arrival times
# at a given rate, mixed prompt and output lengths, prompts cut from the training text). The clock is virtual: it
# advances by each step's measured time, and requests arrive at the trace's times. The metrics are the ones every
# serving benchmark reports: **TTFT** (time to first token, from arrival), **TPOT** (time per output token after the
# first), their p50 and p99 over requests, and **throughput** (generated tokens per second).

# %%
from infopt.llm.engine import ContinuousEngine, StaticEngine, fit_cost_model
from infopt.llm.readings import batching_reading, step_split_reading

trace = poisson_trace(16, rate_per_s=60.0, seed=0, prompt_len=(16, 64), output_len=(16, 48))
static_stats = StaticEngine(target, num_blocks=160, block_size=16, batch_size=8).run(trace)
cont_stats = ContinuousEngine(target, num_blocks=160, block_size=16, max_batch=8).run(trace)
print(f"{'engine':12} {'tok/s':>7} {'TTFT p50':>9} {'TTFT p99':>9} {'TPOT p50':>9} {'TPOT p99':>9} {'steps':>6}")
for name, st in (("static", static_stats), ("continuous", cont_stats)):
    s = st.summary()
    print(f"{name:12} {s['throughput_tok_s']:7.0f} {s['ttft_p50'] * 1e3:7.1f}ms {s['ttft_p99'] * 1e3:7.1f}ms "
          f"{s['tpot_p50'] * 1e3:7.2f}ms {s['tpot_p99'] * 1e3:7.2f}ms {len(st.steps):6}")
print("same tokens for every request either way:", static_stats.outputs() == cont_stats.outputs())
ratio = cont_stats.throughput / static_stats.throughput
print(f"continuous / static throughput: {ratio:.2f}x")
for name, st in (("static", static_stats), ("continuous", cont_stats)):
    print(f"{name:>10}: busy {st.busy_fraction:.0%} of the run, {st.mean_batch:.1f} sequences per decode step "
          f"(limit 8), a request left waiting after {st.queued_fraction:.0%} of its steps")
cpu_cost = fit_cost_model(cont_stats)
print(f"a decode step on this CPU (fitted to the continuous run): {cpu_cost.decode_step_s * 1e3:.2f} ms + "
      f"{cpu_cost.decode_seq_s * 1e3:.3f} ms per sequence, + {cpu_cost.prefill_token_s * 1e6:.1f} us per prefilled "
      f"token: " + step_split_reading(cpu_cost.decode_step_s, cpu_cost.decode_seq_s, 8))
print("->", batching_reading(static_stats, cont_stats, 60.0, len(trace)))

# %% [markdown]
# Both engines produce every request's own greedy tokens; what changes is when. Continuous batching admits a
# request at the next step instead of waiting for a batch to fill or drain, at the price of sharing each step with
# more sequences (compare the TTFT and TPOT columns). Whether it also serves
# more tokens per second depends on who waits for whom. The **busy fraction** is the share of the run the engine
# spent computing steps; below 1 it sat idle between arrivals. Busy is not yet saturated: an engine that steps
# all the time with half-empty batches still takes each request the moment it comes. The sign of saturation is a
# **queue**: requests left waiting after a step. A saturated engine shows its own throughput; otherwise the
# throughput measures the trace. The fit says how a step's time splits into a fixed part, paid once per step, and
# a part per sequence: the larger the fixed part, the more a fuller batch saves.

# %% [markdown]
# **Two model sizes.** This model is small enough that a step is largely Python's and torch's fixed cost per
# operation. The benchmark (`benchmarks/llm.py`, its output shipped in `data/bench.json`) measures the KV cache and
# both batching engines on it and on a model 30 times larger (d = 512, 8 layers, random weights: timing does not
# care what the model says), with the same prompt, trace and pool:

# %%
import json
from pathlib import Path

from infopt.llm.readings import model_sizes_reading

bench = json.loads(Path("data/bench.json").read_text())
print(f"shipped benchmark ({bench['when']}, {bench['machine']}):")
for size, b in (("tiny", bench), ("large", bench["large"])):
    print(f"  {size:5} ({b['weights']:>10,} weights): KV cache {b['kv_cache']['speedup']:5.1f}x over recomputing "
          f"({b['kv_cache']['new_tokens']} tokens); continuous / static throughput at equal p99 latency "
          f"{b['batching']['ratio']:.2f}x")
print("->", model_sizes_reading(bench))

# %% [markdown]
# On a GPU the split is different again: a decode step of a real model is one read of its weights (section 1),
# whatever the batch, so nearly all of a step is the part a fuller batch shares. That is where continuous
# batching's large gains over static batching in vLLM's and Orca's papers come from.

# %% [markdown]
# **A clock for a real GPU.** A GPU serving a real model follows section 1's arithmetic, not this CPU's overheads,
# and the engines take a **cost model** for their clock: seconds per decode step (reading the weights), per
# sequence in it (reading its KV cache, its share of the compute), per prefilled token (compute-bound), and per
# prefill call. `fit_cost_model` fitted one to this CPU's run above; below, one is written down for Llama 3 8B in
# BF16 on an H200 from section 1's figures, and the same scheduler replays traces with it (`model=None`: the blocks
# are counted as in a real run, the arithmetic is skipped).

# %%
from infopt.llm.engine import CostModel
from infopt.llm.memory import kv_cache_bytes

llama_kv_per_token = kv_cache_bytes(llama8b, 1, "bf16")
cost = CostModel(decode_step_s=t_read,                            # the weights, read once per step
                 decode_seq_s=1024 * llama_kv_per_token / HBM_BYTES_S + 2 * flops_per_token / BF16_FLOPS,
                 prefill_call_s=0.5e-3,
                 prefill_token_s=2 * flops_per_token / BF16_FLOPS,  # compute-bound, at half the peak
                 kv_bytes_per_token=llama_kv_per_token, link_bytes_per_s=50e9)
print(f"Llama 3 8B on an H200 (modelled): {cost.decode_step_s * 1e3:.2f} ms per decode step + "
      f"{cost.decode_seq_s * 1e6:.0f} us per sequence + {cost.prefill_token_s * 1e6:.0f} us per prefilled token")

# %% [markdown]
# **Tuning to an SLA.** The batch limit is the knob. A larger batch serves more tokens per second, but every
# sequence in it waits for the whole step, so TPOT grows; with too small a batch, requests queue and TTFT explodes.
# A service states a latency target (here: p99 TPOT under 7 ms and p99 TTFT under 500 ms) and runs the batch limit
# that meets it with the most throughput. Replay one trace at each limit, with static batching beside it: 96
# requests arriving at 80 per second, answers of 16 to 160 tokens, more than a small batch can serve.

# %%
from infopt.llm.readings import sla_reading

sweep_trace = poisson_trace(96, rate_per_s=80.0, seed=2, prompt_len=(16, 96), output_len=(16, 160))
limits = [8, 16, 32, 64]
# 1536 blocks of 16 tokens: room for 64 sequences of the longest length (96 + 160), so nothing is preempted
sweep = {b: ContinuousEngine(None, num_blocks=1536, block_size=16, max_batch=b, cost=cost).run(sweep_trace).summary()
         for b in limits}
static_sweep = StaticEngine(None, num_blocks=1536, block_size=16, batch_size=32, cost=cost).run(sweep_trace).summary()
SLA_TPOT_S, SLA_TTFT_S = 7e-3, 0.5


def breaks(s: dict) -> list[str]:
    """The SLA's bounds a run breaks."""
    return ([f"TPOT {s['tpot_p99'] * 1e3:.2f} > {SLA_TPOT_S * 1e3:g} ms"] if s["tpot_p99"] > SLA_TPOT_S else []) + (
        [f"TTFT {s['ttft_p99'] * 1e3:.0f} > {SLA_TTFT_S * 1e3:g} ms"] if s["ttft_p99"] > SLA_TTFT_S else [])


meets = [b for b in limits if not breaks(sweep[b])]
best = max(meets, key=lambda b: sweep[b]["throughput_tok_s"], default=None)
print(f"{'batching':14} {'tok/s':>7} {'TTFT p99':>10} {'TPOT p99':>9}  {'queued':>6}  SLA")
for name, s in [*((f"continuous {b}", sweep[b]) for b in limits), ("static 32", static_sweep)]:
    print(f"{name:14} {s['throughput_tok_s']:7.0f} {s['ttft_p99'] * 1e3:8.1f}ms {s['tpot_p99'] * 1e3:7.2f}ms  "
          f"{s['queued_fraction']:6.0%}  {'; '.join(breaks(s)) or 'met'}")
print(f"limits meeting the SLA: {meets}; the one with the most throughput: {best}")
print("->", sla_reading(limits, sweep))
tput = [sweep[b]["throughput_tok_s"] for b in limits]
tpot = [sweep[b]["tpot_p99"] for b in limits]
fig = go.Figure(go.Scatter(x=[t * 1e3 for t in tpot], y=tput, mode="lines+markers+text",
                           text=[f"batch {b}" for b in limits], textposition="top left", name="continuous",
                           marker=dict(size=11, symbol=["circle" if b in meets else "x" for b in limits])))
fig.add_trace(go.Scatter(x=[static_sweep["tpot_p99"] * 1e3], y=[static_sweep["throughput_tok_s"]],
                         mode="markers+text", text=["static 32"], textposition="bottom right", name="static"))
fig.add_vline(x=SLA_TPOT_S * 1e3, line=dict(dash="dash"), annotation_text="SLA: p99 TPOT")
fig.update_layout(title="Llama 3 8B on an H200 (cost model), 80 requests/s: throughput against p99 TPOT "
                        "(x: breaks the SLA)", xaxis_title="p99 TPOT (ms)", yaxis_title="tokens/s", height=380)
fig.show()

# %% [markdown]
# The batching explorer replays the same cost model on a fresh trace: move the batch limit and the arrival rate
# and watch where the throughput/latency point lands, and pick the latency measure your SLA is written in.

# %%
from infopt.widgets.llm_view import batching_explorer

batching_explorer(cost, batch_limits=(4, 8, 16, 32, 64), rates=(20.0, 40.0, 80.0, 160.0), n=64, num_blocks=2048)

# %% [markdown]
# **Preemption.** With too few blocks for the work, the scheduler preempts. Here the same trace runs on a
# cache of 24 blocks, once with each preemption mode:

# %%
preempt_runs = {}
for mode in ("recompute", "swap"):
    st = preempt_runs[mode] = ContinuousEngine(target, num_blocks=24, block_size=16, max_batch=8,
                                               preemption=mode).run(trace)
    s = st.summary()
    print(f"preemption={mode:9}: {st.preemptions:3} preemptions, peak {st.peak_blocks} blocks, "
          f"{s['throughput_tok_s']:5.0f} tok/s, same tokens as before: {st.outputs() == cont_stats.outputs()}")

# %% [markdown]
# Replay the recompute run's block tables: each row of cells is the pool, coloured by the sequence holding each
# block. Sequences grow a block at a time; when the pool is full, the latest arrival loses its blocks, and it comes
# back later with its prompt and output prefilled again.

# %%
block_table_view(preempt_runs["recompute"])

# %% [markdown]
# **Chunked prefill.** A long prompt admitted in one step makes that step long, and every running sequence's TPOT
# pays for it. With a **token budget** per step, decodes go first (one token each) and prompts are prefilled in
# chunks with what is left (vLLM's `max_num_batched_tokens`, TensorRT-LLM's `max_num_tokens`). Measure it rather
# than assume it, on prompts of 96 to 320 tokens:

# %%
long_trace = poisson_trace(32, rate_per_s=40.0, seed=3, prompt_len=(96, 320), output_len=(16, 48))
for budget in (None, 256, 128):
    st = ContinuousEngine(None, num_blocks=2048, block_size=16, max_batch=16, token_budget=budget,
                          cost=cost).run(long_trace)
    s = st.summary()
    print(f"token budget {str(budget):>4}: TPOT p99 {s['tpot_p99'] * 1e3:6.2f} ms, "
          f"TTFT p50 {s['ttft_p50'] * 1e3:6.1f} ms, TTFT p99 {s['ttft_p99'] * 1e3:6.1f} ms, "
          f"{s['throughput_tok_s']:5.0f} tok/s")

# %% [markdown]
# Read the numbers before believing the slogan. A prompt of a few hundred tokens costs a few milliseconds of
# prefill here, about one decode step, so splitting it mostly adds steps, each paying the fixed cost of reading
# the weights. Chunking pays when prompts are thousands of tokens long: a 4K-token prompt is about 130 ms of
# prefill in this cost model, a stall of some 40 decode steps for every sequence batched with it. (The tiny
# model's 512-token limit bars such prompts from this trace; the cost model is where to try them.)

# %% [markdown]
# **Against Hugging Face.** The same model, converted to `LlamaForCausalLM`, served by transformers' `generate` in
# static batches of 8 (left padding, greedy), on the same trace and the same virtual clock:

# %%
from infopt.llm.hf_baseline import hf_static_generate

hf_stats = hf_static_generate(target, trace, batch_size=8, hf_model=hf_target)
print(f"Hugging Face generate, static batches of 8: {hf_stats.throughput:5.0f} tok/s, TTFT p99 "
      f"{hf_stats.percentile('ttft', 99) * 1e3:.0f} ms; our continuous engine: {cont_stats.throughput:5.0f} tok/s "
      f"({cont_stats.throughput / hf_stats.throughput:.2f}x)")
print("same tokens:", hf_stats.outputs() == cont_stats.outputs())

# %% [markdown]
# **How the real systems do it.** vLLM's v0 scheduler is what the next exercise builds: a waiting queue served
# first come, first served, a running queue that decodes every step, and preemption of the latest arrival when
# blocks run out (recompute by default; swap for parallel sampling). vLLM v1 merges prefill and decode under one
# token budget per step (chunked prefill is always on). TensorRT-LLM's batch manager does in-flight batching with
# `max_batch_size` and `max_num_tokens`, and its capacity scheduler chooses between `GUARANTEED_NO_EVICT` (admit
# a request when its whole length fits: no preemption) and `MAX_UTILIZATION` (admit greedily, pause requests
# when the cache fills). Hugging Face's `generate` batches statically; its `generate_batch` /
# `ContinuousBatchingManager` adds continuous batching with a FIFO or prefill-first scheduler.

# %% [markdown]
# ### Exercise 4 — one step of a continuous-batching scheduler (5 points)
#
# Write `schedule_step(waiting, running, free_blocks, block_size, max_batch)`: one step of vLLM v0's scheduler, with
# preemption by recomputation. It sees each sequence as a `SeqView(seq_id, arrival_s, num_tokens)`: for a running
# sequence `num_tokens` is what its cache holds, for a waiting one its prompt plus anything it generated before a
# preemption (all to be recomputed). A sequence holds `ceil(num_tokens / block_size)` blocks; `free_blocks` are free.
#
# 1. Every running sequence decodes one token this step, which needs a new block only when
#    `num_tokens % block_size == 0` (its last block is full). While the blocks needed exceed the free blocks,
#    preempt the running sequence that arrived last (largest `arrival_s`; ties: higher `seq_id`): its
#    `ceil(num_tokens / block_size)` blocks return to the pool, and it no longer needs a block.
# 2. Then admit waiting sequences in arrival order (FCFS: by `arrival_s`; ties: lower `seq_id` first), each while
#    the batch (running minus preempted plus admitted) is below `max_batch` and its `ceil(num_tokens / block_size)`
#    blocks fit in what is left after step 1. Stop at the first that does not fit: no skipping ahead. A sequence
#    preempted in this step is never admitted in it (the engine puts it at the front of the queue for the next one).
#
# Return a `StepPlan(preempt, run, admit)` of three lists of `seq_id`s (Python ints): `preempt` in the order you
# chose them, `run` the running sequences that decode this step, in their given order, and `admit` in the order
# admitted. Do not modify `waiting` or `running`.
#
# The tests compare with the library's scheduler (`infopt.llm.scheduler.schedule_step`, which your code must not
# call) on a case built for each rule above and on random states.

# %% solution=true grade_id="schedule_step"
from infopt.llm.scheduler import SeqView, StepPlan


def schedule_step(waiting: list[SeqView], running: list[SeqView], free_blocks: int, block_size: int,
                  max_batch: int) -> StepPlan:
    """Preempt the latest arrivals until every running sequence's next token fits, then admit FCFS."""
    ### BEGIN SOLUTION
    def blocks(s: SeqView) -> int:
        return -(-s.num_tokens // block_size)

    def needs(s: SeqView) -> bool:
        return s.num_tokens % block_size == 0

    active = list(running)
    free = free_blocks
    needed = sum(needs(s) for s in active)
    preempt = []
    while needed > free:
        victim = max(active, key=lambda s: (s.arrival_s, s.seq_id))
        active.remove(victim)
        preempt.append(victim.seq_id)
        free += blocks(victim)
        needed -= needs(victim)
    left, batch, admit = free - needed, len(active), []
    for s in sorted(waiting, key=lambda s: (s.arrival_s, s.seq_id)):
        if batch >= max_batch or blocks(s) > left:
            break
        admit.append(s.seq_id)
        left -= blocks(s)
        batch += 1
    return StepPlan(preempt=preempt, run=[s.seq_id for s in active], admit=admit)
    ### END SOLUTION


# %% grade_id="schedule_step_test" points=5
from infopt.grading import call_student, case, check_true, forbidding
from infopt.llm import scheduler as _scheduler
from infopt.llm.scheduler import SeqView, StepPlan

# While your function runs, the library's scheduler raises: write the policy yourself.
_schedule_step = forbidding(schedule_step, "infopt.llm.scheduler:schedule_step", exercise="the scheduler step")


def _views(seqs: list) -> str:
    """SeqViews as the call would be written."""
    return "[" + ", ".join(f"SeqView({s.seq_id}, {s.arrival_s:g}, {s.num_tokens})" for s in seqs) + "]"


def _check_step(label: str, waiting: list, running: list, free: int, bs: int, max_batch: int, hidden: bool) -> None:
    """Compare the student's plan with the library's, field by field, on one state."""
    call = (f"schedule_step(waiting={_views(waiting)}, running={_views(running)}, free_blocks={free}, "
            f"block_size={bs}, max_batch={max_batch})")
    with case(label, show=call, hidden=hidden):
        want = _scheduler.schedule_step(list(waiting), list(running), free, bs, max_batch)
        got = call_student(_schedule_step, waiting, running, free, bs, max_batch, name="schedule_step")
        check_true(type(got) is StepPlan, "schedule_step must return a StepPlan(preempt, run, admit) of three lists "
                   f"of seq_ids (Python ints), got {type(got).__name__}: {got!r}"[:300])
        for part in ("preempt", "run", "admit"):
            v = getattr(got, part)
            check_true(type(v) is list and all(type(i) is int for i in v),
                       f"StepPlan.{part} must be a list of seq_ids (Python ints), got {v!r}"[:300])
        check_true(got.preempt == want.preempt, f"preempt: expected {want.preempt}, got {got.preempt}")
        check_true(got.run == want.run, f"run: expected {want.run}, got {got.run} (run lists the running sequences "
                   "that decode this step: those not preempted, in their given order)")
        check_true(got.admit == want.admit, f"admit: expected {want.admit}, got {got.admit}")


def _step_rule_cases(ri, hidden: bool) -> None:
    """One case per rule, in an order where each stored mistake first fails the case of its own rule. Ids, arrival
    times and sizes come from `ri(lo, hi)` (a random int in [lo, hi]); nothing in them gives the answer away."""
    ids = iter(int(i) for i in np.random.default_rng(ri(0, 1 << 30)).permutation(90) + 10)

    def seq(arrival: float, n: int, sid: int | None = None) -> SeqView:
        return SeqView(next(ids) if sid is None else sid, float(arrival), int(n))

    def check(label: str, waiting: list, running: list, free: int, bs: int, max_batch: int = 16) -> None:
        _check_step(label, waiting, running, free, bs, max_batch, hidden)

    bs = ri(3, 8)
    t = sorted(ri(0, 900) / 10 + i / 100 for i in range(5))   # five distinct arrival times, increasing
    # 1. only num_tokens % block_size == 0 needs a block: one does, two sit one short of a boundary, one just past it
    running = [seq(t[4], bs * ri(1, 3) + bs - 1), seq(t[0], bs * ri(1, 4)), seq(t[2], bs * ri(0, 3) + bs - 1),
               seq(t[1], bs * ri(0, 3) + 1)]
    check("a running sequence needs a new block only when num_tokens % block_size == 0",
          [seq(t[4] + 1, 2 * bs)], running, 1, bs)
    # 2. the victim (latest arrival, listed last, highest id, most blocks) frees h blocks; one was needed
    h = ri(2, 4)
    check("a preempted sequence's blocks return to the pool", [],
          [seq(t[0], bs, 1), seq(t[1], bs * (h - 1) + ri(1, bs - 1), 99)], 0, bs)
    # 3. the latest arrival is neither listed last nor the highest id nor the biggest; it needs no block itself
    sids = sorted(next(ids) for _ in range(4))
    running = [seq(t[1], bs * 3, sids[3]), seq(t[4], bs + ri(1, bs - 1), sids[0]),
               seq(t[0], bs * ri(3, 4) + ri(1, bs - 1), sids[2]), seq(t[2], bs * ri(3, 4) + ri(1, bs - 1), sids[1])]
    check("preempt the running sequence that arrived last", [], running, 0, bs)
    # 4. three arrived at the same (latest) time; the highest seq_id of them is listed in the middle
    sids = sorted(next(ids) for _ in range(4))
    running = [seq(t[0], bs * 3, sids[0]), seq(t[3], bs + ri(1, bs - 1), sids[1]),
               seq(t[3], bs + ri(1, bs - 1), sids[3]), seq(t[3], bs + ri(1, bs - 1), sids[2])]
    check("ties between the latest arrivals: preempt the higher seq_id", [], running, 0, bs)
    # 5. the victim needed a block, so after it leaves its own 2 blocks would fit again: it must still wait
    check("a sequence preempted in this step is never admitted in it", [],
          [seq(t[0], bs), seq(t[1], 2 * bs)], 1, bs)
    # 6. the same state with a waiting sequence of 2 blocks: it fits only if the victim no longer needs a block
    check("a preempted sequence no longer needs a block", [seq(t[2], bs + ri(1, bs))],
          [seq(t[0], bs), seq(t[1], 2 * bs)], 1, bs)
    # 6b. every running sequence needs a block and none is free: one preemption frees too little, so the loop
    #     preempts again; the second victim has the lower seq_id, so `preempt` in the order chosen is not sorted
    sids = sorted(next(ids) for _ in range(3))
    check("while the blocks needed exceed the free blocks, preempt again (in the order chosen)", [],
          [seq(t[0], bs, sids[0]), seq(t[1], 2 * bs, sids[1]), seq(t[2], bs, sids[2])], 0, bs)
    # 7. four waiting, listed latest first; blocks for two of them
    waiting = [seq(t[4], bs), seq(t[3], bs), seq(t[2], bs), seq(t[1], bs)]
    check("admit waiting sequences in arrival order (FCFS)", waiting, [seq(t[0], bs + 1)], 2, bs)
    # 8. two waiting arrived at the same time, the higher seq_id listed first; blocks for one
    sids = sorted(next(ids) for _ in range(2))
    check("waiting sequences that arrived at the same time: lower seq_id first",
          [seq(t[3], bs, sids[1]), seq(t[3], bs, sids[0])], [seq(t[0], bs + 1)], 1, bs)
    # 9. the second in arrival order does not fit, the third would
    f = ri(2, 5)
    check("stop at the first that does not fit (no skipping ahead)",
          [seq(t[1], bs), seq(t[2], bs * f), seq(t[3], bs)], [seq(t[0], bs + 1)], f, bs)
    # 10. num_tokens one past a block boundary needs one more block than num_tokens // block_size
    k = ri(1, 4)
    check("a waiting sequence needs ceil(num_tokens / block_size) blocks",
          [seq(t[2], bs * k + ri(1, bs - 1))], [seq(t[0], bs + 1)], k, bs)
    # 11. the running sequences' new blocks come first: what is left is free minus what they need
    f = ri(2, 5)
    check("blocks fit in what is left after step 1", [seq(t[3], bs * f)],
          [seq(t[0], bs * ri(1, 3)), seq(t[1], bs + 1)], f, bs)
    # 12. batch limit: one running, room in blocks for every waiting one; max_batch - 1 of them are admitted
    m = ri(3, 5)
    check("admit only while the batch is below max_batch", [seq(t[2] + i / 1000, bs) for i in range(m + 1)],
          [seq(t[0], bs + 1)], 2 * m, bs, m)
    # 13. after a preemption the batch is smaller: max_batch = len(running), and one may be admitted
    check("the batch is running minus preempted plus admitted", [seq(t[4], bs)],
          [seq(t[0], bs), seq(t[1], bs + ri(1, bs - 1))], 0, bs, 2)
    # 14. a batch already above max_batch (the limit was lowered) admits nothing
    check("admit only while the batch is below max_batch (here it is above it)", [seq(t[4], bs)],
          [seq(t[0], bs + 1), seq(t[1], bs + 1), seq(t[2], bs + 1)], 4, bs, 2)


_visible = np.random.default_rng(2024)  # fixed numbers for the visible cases (the hidden ones are drawn per grading)
_step_rule_cases(lambda lo, hi: int(_visible.integers(lo, hi + 1)), hidden=False)
### BEGIN HIDDEN TESTS
from infopt.grading import grading_rng

_rng = grading_rng(4)


def _ri(lo: int, hi: int) -> int:
    """A random int in [lo, hi]."""
    return int(_rng.integers(lo, hi + 1))


_step_rule_cases(_ri, hidden=True)
for _trial in range(40):
    _bs = _ri(1, 8)
    _ids = [int(i) for i in _rng.permutation(90)[:11] + 10]
    _times = [_ri(0, 30) / 2 for _ in range(11)]  # coarse, so that ties happen
    _n_run, _n_wait = _ri(0, 6), _ri(0, 5)
    _views_all = [SeqView(_ids[i], _times[i], _bs * _ri(0, 4) + _ri(1, _bs) if _ri(0, 1) else _bs * _ri(1, 5))
                  for i in range(_n_run + _n_wait)]
    _check_step(f"random state #{_trial}", _views_all[_n_run:], _views_all[:_n_run], _ri(0, 6), _bs,
                _ri(max(1, _n_run), 8), hidden=True)
### END HIDDEN TESTS

# %% [markdown]
# ## 5. Speculative decoding, multi-token prediction and EAGLE
#
# Batching fills a decode step with many sequences; **speculation** fills it with several tokens of one sequence.
# A small **draft** model proposes k tokens, one cheap pass each; the target scores all k (plus one more position)
# in ONE forward pass, as a prefill of k + 1 tokens, which on a memory-bound GPU costs about what one decode step
# costs. The **accept/reject rule** of speculative sampling (Leviathan et al. 2023; Chen et al. 2023) accepts a prefix
# of the draft so that the output has the same distribution as the target's own sampling: accept draft token x with
# probability min(1, p(x) / q(x)) (p: target, q: draft); at the first rejection emit a token drawn from
# normalize(max(0, p − q)) and stop; if all k are accepted, emit a bonus token drawn from the target's next
# distribution. Greedy decoding is the limit where p and q are one-hot: a draft token is kept iff it is the
# target's argmax, so the output equals the target's greedy output token for token.

# %%
from infopt.llm.sampling import SamplingParams
from infopt.llm.speculative import speculative_generate

spec_prompt = tok.encode("    def __init__(self, name, value):\n        self.")
plain = generate(target, spec_prompt, 48, cache="contiguous", stop_at_eos=False)
greedy_spec = speculative_generate(target, draft, spec_prompt, 48, k=4, stop_at_eos=False)
print(f"greedy, k=4: same tokens as the target's own greedy decoding: {greedy_spec.tokens == plain.tokens}; "
      f"{greedy_spec.target_passes} target passes instead of {plain.forward_passes}, acceptance "
      f"{greedy_spec.acceptance_rate:.0%}")
print("   the greedy text, degenerate on purpose (see below):", repr(tok.decode(plain.tokens[:40])))
hot = SamplingParams(temperature=0.8)
plain_hot = generate(target, spec_prompt, 48, hot, cache="contiguous", seed=0, stop_at_eos=False)
spec_runs = {k: speculative_generate(target, draft, spec_prompt, 48, k=k, params=hot, seed=0, stop_at_eos=False)
             for k in (2, 4, 6)}
print(f"temperature 0.8, plain: {plain_hot.forward_passes} target passes, {plain_hot.seconds * 1e3:.0f} ms")
for k, r in spec_runs.items():
    print(f"temperature 0.8, k={k}: {r.target_passes} target passes ({plain_hot.forward_passes / r.target_passes:.2f}x "
          f"fewer), acceptance {r.acceptance_rate:.0%}, {r.tokens_per_target_pass:.2f} tokens per target pass, "
          f"{r.seconds * 1e3:.0f} ms")
fig = go.Figure([go.Bar(x=[f"k={k}" for k in spec_runs], y=[plain_hot.forward_passes / r.target_passes
                                                            for r in spec_runs.values()], name="fewer target passes"),
                 go.Bar(x=[f"k={k}" for k in spec_runs], y=[plain_hot.seconds / r.seconds for r in spec_runs.values()],
                        name="wall-time speed-up")])
fig.update_layout(title="speculative sampling with the tiny draft, temperature 0.8, 48 tokens",
                  yaxis_title="x over plain", barmode="group", height=340)
fig.show()

# %% [markdown]
# Greedy decoding of a model this small falls into repetition, which the draft predicts perfectly, so its
# acceptance says little; sampling at temperature 0.8 gives the honest figure.
#
# Fewer target passes is not yet less time. A verification step costs k draft passes plus one target pass over
# k + 1 tokens, and it pays off when that is less than the plain steps it replaces. Take the step apart, on this
# CPU and, with section 1's figures, for Llama 3 8B on an H200 drafted by a model an eighth its size (Llama 3.2 1B,
# 1.24B weights), assuming the acceptance this tiny pair just measured:

# %%
from infopt.llm.readings import speculation_reading

spec_k = 4
spec_run = spec_runs[spec_k]
plain_step_ms = 1e3 * plain_hot.seconds / plain_hot.forward_passes
spec_step_ms = 1e3 * spec_run.seconds / spec_run.target_passes
t1, tk1, d1 = forward_ms(target, 1, 1), forward_ms(target, 1, spec_k + 1), forward_ms(draft, 1, 1)
print(f"this CPU, k={spec_k}: a verification step took {spec_step_ms:.2f} ms and emitted "
      f"{spec_run.tokens_per_target_pass:.2f} tokens; a plain step took {plain_step_ms:.2f} ms and emitted 1: "
      f"{plain_hot.seconds / spec_run.seconds:.2f}x")
print(f"   one forward pass: target {t1:.2f} ms for 1 token, {tk1:.2f} ms for {spec_k + 1}; draft {d1:.2f} ms "
      f"({d1 / t1:.0%} of the target's time, with {draft.num_parameters() / target.num_parameters():.0%} of its "
      "weights)")
draft_read_s = 2 * 1.24e9 / HBM_BYTES_S                          # Llama 3.2 1B in BF16, read once per pass
verify_s = max(t_read, (spec_k + 1) * flops_per_token / BF16_FLOPS)   # k + 1 tokens: still one read of the weights
h200 = spec_run.tokens_per_target_pass * t_read / (spec_k * draft_read_s + verify_s)
print(f"H200 model, k={spec_k}: {spec_k} draft passes {spec_k * draft_read_s * 1e3:.2f} ms + verification "
      f"{verify_s * 1e3:.2f} ms emit {spec_run.tokens_per_target_pass:.2f} tokens, against {t_read * 1e3:.2f} ms per "
      f"plain token: {h200:.2f}x")
print("->", speculation_reading(spec_k, d1 / t1, plain_hot.seconds / spec_run.seconds, draft_read_s / t_read, h200))

# %% [markdown]
# Whether speculation pays is the k draft passes' cost against the target passes they save. Compare the draft's
# share of the target's time with its share of the weights: on this CPU much of a small model's pass is fixed cost
# per operation (section 1 measured how little a pass's time grows with its tokens), so a draft costs more than
# its size says. On the GPU a pass of a big model is a read of its weights, the draft reads an eighth of them, and
# a k + 1-token verification costs one decode step: that is where the pass count turns into time. The gain also depends on the acceptance rate α:
# with per-token acceptance α, a step emits (1 − α^(k+1)) / (1 − α) tokens on average.
#
# At temperature > 0 the rule is random, and its promise is about distributions: the tokens it emits are
# distributed as the target's. The next exercise implements the rule; its tests check the distribution
# (many samples at a small vocabulary) and exactness (the same random draws as the library's reference).

# %% [markdown]
# ### Exercise 5 — the speculative accept/reject step (4 points)
#
# Write `speculative_accept(draft_tokens, draft_probs, target_probs, rng)`. The draft proposed `k` tokens
# `draft_tokens` (`x_i` drawn from `q_i = draft_probs[i]`, a float64 array of shape `[k, V]`); one target pass gave
# `p_i = target_probs[i]` for the same positions, plus `p_k` for the position after the last draft (`[k + 1, V]`).
#
# 1. For `i = 0, 1, ..., k - 1`: draw `u = rng.random()` and accept `x_i` if `u < min(1, p_i(x_i) / q_i(x_i))`.
# 2. At the first rejection, emit one token drawn from the residual `normalize(max(0, p_i - q_i))` with
#    `rng.choice(V, p=...)`, and stop.
# 3. If all `k` drafts are accepted, emit a bonus token drawn from `p_k` with `rng.choice(V, p=...)`.
#
# Return the emitted tokens (the accepted drafts, then the residual or bonus token: 1 to k + 1 of them) as a list of
# Python ints. Use the rng exactly in this order and for nothing else — one `rng.random()` per draft token examined,
# then one `rng.choice` — so that the same seed gives the library's tokens. Do not modify `draft_probs` or
# `target_probs`.
#
# The tests check greedy decoding (one-hot `p` and `q`) token for token; then, over thousands of calls at a small
# vocabulary with drafts drawn from `q`, the law speculative sampling guarantees: the number of tokens emitted
# (draft `i` is accepted with probability `sum_x min(p_i(x), q_i(x))`) and each emitted token distributed as the
# target's `p`, with bounds a correct answer breaks with probability below 1e-8 per grading; and finally your tokens
# against the library's (`infopt.llm.speculative.speculative_accept`, which your code must not call) under the same
# seeds.

# %% solution=true grade_id="speculative_accept"
def speculative_accept(draft_tokens: list[int], draft_probs: np.ndarray, target_probs: np.ndarray,
                       rng: np.random.Generator) -> list[int]:
    """Keep each draft with probability min(1, p/q); at the first rejection a residual token, else a bonus token."""
    ### BEGIN SOLUTION
    vocab = target_probs.shape[1]
    out = []
    for i, x in enumerate(draft_tokens):
        if rng.random() < min(1.0, target_probs[i, x] / draft_probs[i, x]):
            out.append(int(x))
            continue
        residual = np.maximum(target_probs[i] - draft_probs[i], 0.0)
        out.append(int(rng.choice(vocab, p=residual / residual.sum())))
        return out
    out.append(int(rng.choice(vocab, p=target_probs[len(draft_tokens)])))
    return out
    ### END SOLUTION


# %% grade_id="speculative_accept_test" points=4
import math

from infopt.grading import GradingError, call_student, case, check_true, forbid
from infopt.llm import speculative as _speculative

_SPEC_REF = "infopt.llm.speculative:speculative_accept"


def _no_library():
    """While your function runs, the library's accept/reject step raises: write it yourself. (One guard around many
    calls: the test's own reference calls stay outside it.)"""
    return forbid(_SPEC_REF, exercise="the accept/reject step",
                  namespaces=(getattr(speculative_accept, "__globals__", globals()),))


_ACCEPT_RULE = "accept draft token x_i if u < min(1, p_i(x_i) / q_i(x_i))"
_RESIDUAL_RULE = "at the first rejection, emit a token drawn from the residual normalize(max(0, p_i - q_i))"
_STOP_RULE = "stop at the first rejection"
_BONUS_RULE = "if all k drafts are accepted, emit a bonus token drawn from p_k"
_DELTA = 1e-10  # false-failure probability of one frequency bound (at most 42 per grading: below 1e-8 in all)


def _spec_fingerprint(arg: object) -> object:
    """What the caller owns: the arrays' bytes and the tokens (the rng is meant to advance)."""
    if isinstance(arg, np.random.Generator):
        return "rng"
    if isinstance(arg, np.ndarray):
        return (arg.dtype.str, arg.shape, arg.tobytes())
    return repr(arg)


def _sum_hint(err: BaseException) -> str:
    """numpy's complaint about probabilities that do not sum to 1, explained."""
    return f" (rng.choice needs probabilities that sum to 1: {_RESIDUAL_RULE})" if "sum to 1" in str(err) else ""


def _check_unchanged(arrays: list[np.ndarray], before: list[bytes]) -> None:
    """The probability arrays the test passed are as they were (checked after a batch of calls)."""
    if any(a.tobytes() != b for a, b in zip(arrays, before)):
        raise GradingError("speculative_accept changed its input (draft_probs or target_probs): work on a copy; "
                           "the caller's arrays must stay as they were")


def _spec_call(drafts: list[int], q: np.ndarray, p: np.ndarray, rng: np.random.Generator) -> list:
    """One checked call: no forbidden call, no raise, no changed input, a list of Python ints."""
    try:
        with _no_library():
            out = call_student(speculative_accept, list(drafts), q, p, rng, name="speculative_accept",
                               fingerprint=_spec_fingerprint)
    except GradingError as err:
        raise GradingError(f"{err}{_sum_hint(err)}") from None
    check_true(type(out) is list and all(type(t) is int for t in out),
               f"speculative_accept must return the emitted tokens as a list of Python ints, got {out!r} "
               f"({type(out).__name__}" + (f" of {type(out[0]).__name__}" if isinstance(out, (list, tuple, np.ndarray))
                                          and len(out) else "") + ")")
    return out


def _greedy_case(label: str, vocab: int, drafts: list[int], target: list[int], seed: int, hidden: bool) -> None:
    """One-hot q at the drafts, one-hot p at `target` (k + 1 tokens): the output is fixed, whatever the rng."""
    k = len(drafts)
    want = []
    for i in range(k):
        want.append(target[i])
        if drafts[i] != target[i]:
            break
    else:
        want.append(target[k])
    acc = len(want) - 1 if len(want) <= k else k  # drafts accepted
    show = (f"speculative_accept(draft_tokens={drafts}, draft_probs=one-hot at {drafts}, target_probs=one-hot at "
            f"{target}, rng) with V = {vocab}")
    with case(label, show=show, hidden=hidden):
        eye = np.eye(vocab)
        got = _spec_call(drafts, eye[drafts], eye[target], np.random.default_rng(seed))
        if got == want:
            return
        head = f"expected {want}, got {got}: "
        check_true(bool(got), head + "speculative_accept emits 1 to k + 1 tokens, never none")
        for i in range(max(len(got), len(want))):
            if i >= len(got):
                if got == drafts:
                    check_true(False, head + f"all {k} drafts were accepted, and then {_BONUS_RULE}")
                check_true(False, head + f"draft token {drafts[i - 1]} at position {i - 1} has p/q = 1 and must be "
                           f"accepted: {_ACCEPT_RULE}")
            if i >= len(want):
                check_true(False, head + f"the draft token at position {acc} was rejected (the target gives it "
                           f"probability 0): {_STOP_RULE}, with the residual token")
            if got[i] == want[i]:
                continue
            if i < acc:
                check_true(False, head + f"draft token {drafts[i]} at position {i} has p/q = 1 and must be accepted: "
                           f"{_ACCEPT_RULE}")
            if i == k:
                check_true(False, head + f"{_BONUS_RULE} (the target's last row), here {target[k]}")
            if got[i] == drafts[i] and len(got) > i + 1:
                check_true(False, head + f"draft token {drafts[i]} at position {i} has p = 0 and must be rejected: "
                           f"{_ACCEPT_RULE}")
            check_true(False, head + f"{_RESIDUAL_RULE}; here the residual is one-hot at {target[i]}")
        check_true(False, head + "(the greedy output is fixed)")


def _greedy_cases(ri, hidden: bool) -> None:
    """Greedy cases in an order where each stored mistake first fails the case that names its rule."""
    for trial in range(4):
        vocab, k = ri(4, 8), ri(2, 4)
        drafts = [ri(0, vocab - 1) for _ in range(k)]
        bonus = (drafts[-1] + ri(1, vocab - 1)) % vocab   # differs from the last draft's row
        _greedy_case(f"greedy, every draft agrees with the target (#{trial})", vocab, drafts, drafts + [bonus],
                     ri(0, 1 << 30), hidden)
    for trial in range(12):
        vocab, k = ri(4, 8), ri(3, 5)
        drafts = [ri(0, vocab - 1) for _ in range(k)]
        j = ri(0, k - 2)                                  # later drafts agree again: an answer must stop at j
        target = drafts + [ri(0, vocab - 1)]
        target[j] = (drafts[j] + ri(1, vocab - 1)) % vocab
        _greedy_case(f"greedy, the target disagrees at position {j} (#{trial})", vocab, drafts, target,
                     ri(0, 1 << 30), hidden)
    vocab = ri(4, 8)
    x = ri(0, vocab - 1)
    _greedy_case("greedy, one draft (k = 1) that agrees", vocab, [x], [x, ri(0, vocab - 1)], ri(0, 1 << 30), hidden)


# p and q for the law: acceptance about 0.65 per position; each stored mistake moves some frequency by 0.17 or more
# (resampling from p instead of the residual: by (1 - acceptance) * p(x) where q(x) >= p(x)), for V = 4, 5 or 6.
_LAW = {"q0": [0.55, 0.05, 0.30, 0.05, 0.03, 0.02], "p0": [0.45, 0.40, 0.05, 0.05, 0.03, 0.02],
        "q1": [0.05, 0.55, 0.05, 0.30, 0.02, 0.03], "p1": [0.40, 0.45, 0.05, 0.05, 0.02, 0.03],
        "p2": [0.10, 0.20, 0.55, 0.10, 0.02, 0.03]}


def _law_inputs(vocab: int, perms: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(q [2, V], p [3, V]) from the templates cut to V tokens, each position's pair relabelled by perms[i]."""
    def row(name: str, i: int) -> np.ndarray:
        r = np.array(_LAW[name][:vocab], dtype=np.float64)
        return (r / r.sum())[perms[i]]
    return np.stack([row("q0", 0), row("q1", 1)]), np.stack([row("p0", 0), row("p1", 1), row("p2", 2)])


def _bound(counts: np.ndarray, probs: np.ndarray, n: int, what: str, rule: str, first: int = 0) -> None:
    """Hoeffding: |count/n - prob| <= sqrt(ln(2/delta) / 2n) for every category (category c is the value first + c),
    else a failure naming the worst."""
    if n == 0:
        return
    freq = counts / n
    slack = math.sqrt(math.log(2 / _DELTA) / (2 * n))
    worst = int(np.argmax(np.abs(freq - probs)))
    check_true(bool(abs(freq[worst] - probs[worst]) <= slack),
               f"{what}: over {n} calls it was {first + worst} with frequency {freq[worst]:.3f}; the law says "
               f"{probs[worst]:.3f} (all frequencies {np.round(freq, 3).tolist()}, law {np.round(probs, 3).tolist()}; "
               f"a correct answer is this far off with probability below {_DELTA:g}). {rule}")


def _law_case(label: str, vocab: int, perms: list[np.ndarray], n: int, seed: int, hidden: bool) -> None:
    """n calls with fresh drafts x_i ~ q_i: the number of tokens emitted, then the law of tokens 1, 2 and the bonus."""
    q, p = _law_inputs(vocab, perms)
    r = np.random.default_rng(seed)
    drafts = np.stack([(r.random((n, 1)) > np.cumsum(q[i])[None, :-1]).sum(1) for i in range(2)], axis=1).tolist()
    with case(label, show=lambda: f"draft_probs = {np.round(q, 4).tolist()}, target_probs = "
              f"{np.round(p, 4).tolist()}, {n} calls", hidden=hidden):
        _spec_call(drafts[0], q, p, np.random.default_rng(seed + 1))   # one checked call (inputs, type, forbidden)
        rng = np.random.default_rng(seed + 2)
        outs, before = [], [q.tobytes(), p.tobytes()]
        with _no_library():
            for x in drafts:
                try:
                    out = speculative_accept(x, q, p, rng)
                except GradingError:
                    raise
                except Exception as err:
                    _check_unchanged([q, p], before)
                    raise GradingError(f"speculative_accept raised {type(err).__name__} on a valid input "
                                       f"(draft_tokens={x}): {err}{_sum_hint(err)}") from None
                if type(out) is not list or not 1 <= len(out) <= 3 or not all(
                        type(t) is int and 0 <= t < vocab for t in out):
                    raise GradingError(f"speculative_accept(draft_tokens={x}, ...) returned {out!r}; with k = 2 it "
                                       f"emits a list of 1 to 3 tokens, Python ints in 0..{vocab - 1}")
                outs.append(out)
        _check_unchanged([q, p], before)
        a = np.minimum(p[:2], q).sum(1)
        lengths = np.bincount([len(o) for o in outs], minlength=4)[1:]
        _bound(lengths, np.array([1 - a[0], a[0] * (1 - a[1]), a[0] * a[1]]), n,
               "the number of tokens emitted (1, 2 or 3 with k = 2) is off", f"Speculative sampling: {_ACCEPT_RULE}, "
               f"so draft i is accepted with probability sum_x min(p_i(x), q_i(x)) = {np.round(a, 3).tolist()}.",
               first=1)
        for pos, rule in ((0, _RESIDUAL_RULE), (1, _RESIDUAL_RULE), (2, _BONUS_RULE)):
            toks = [o[pos] for o in outs if len(o) > pos]
            _bound(np.bincount(toks, minlength=vocab), p[pos], len(toks),
                   f"emitted token {pos + 1} (when there is one) must be distributed as the target's p_{pos}",
                   f"The accepted drafts and the residual tokens together give exactly p_i: {rule}.")


_visible = np.random.default_rng(2025)  # fixed numbers for the visible cases (the hidden ones are drawn per grading)
_greedy_cases(lambda lo, hi: int(_visible.integers(lo, hi + 1)), hidden=False)
_law_case("the law of speculative sampling, V = 5", 5, [np.arange(5)] * 3, 1500, 11, hidden=False)
### BEGIN HIDDEN TESTS
from infopt.grading import grading_rng

_rng = grading_rng(5)


def _ri(lo: int, hi: int) -> int:
    """A random int in [lo, hi]."""
    return int(_rng.integers(lo, hi + 1))


_greedy_cases(_ri, hidden=True)
_V = _ri(4, 6)
_law_case(f"the law of speculative sampling, V = {_V}, tokens relabelled", _V,
          [_rng.permutation(_V) for _ in range(3)], 2500, _ri(0, 1 << 30), hidden=True)


def _same_rng_case(label: str, trials: list[tuple[list[int], np.ndarray, np.ndarray, int]]) -> None:
    """The library and the student from the same seed: the same tokens, and the rng left in the same state."""
    with case(label, show=None):
        before = [a.tobytes() for _, q, p, _ in trials for a in (q, p)]
        arrays = [a for _, q, p, _ in trials for a in (q, p)]
        with _no_library():
            got = []
            for x, q, p, seed in trials:
                rng = np.random.default_rng(seed)
                try:
                    out = speculative_accept(list(x), q, p, rng)
                except GradingError:
                    raise
                except Exception as err:
                    _check_unchanged(arrays, before)
                    raise GradingError(f"speculative_accept raised {type(err).__name__} on a valid input "
                                       f"(draft_tokens={x}): {err}") from None
                got.append((out, rng.bit_generator.state["state"]))
        _check_unchanged(arrays, before)
        for (x, q, p, seed), (out, state) in zip(trials, got):
            ref_rng = np.random.default_rng(seed)
            want = _speculative.speculative_accept(list(x), q, p, ref_rng)
            same = out == want and state == ref_rng.bit_generator.state["state"]
            check_true(same, f"with rng = np.random.default_rng({seed}), draft_tokens = {list(x)}, draft_probs = "
                       f"{np.round(q, 3).tolist()}, target_probs = {np.round(p, 3).tolist()}: the library emits "
                       f"{want}, yours {out}" + (" (the same tokens, but your rng ended in another state)"
                                                 if out == want else "") +
                       ": use the rng exactly as stated, one rng.random() per draft token examined (even when "
                       "p >= q), then one rng.choice(V, p=...), nothing else")


_trials = []
for _t in range(120):
    _k, _V = _ri(1, 4), _ri(4, 8)
    _q = _rng.dirichlet(np.ones(_V), size=_k)
    _p = _rng.dirichlet(np.ones(_V), size=_k + 1)
    _x = [int(_rng.choice(_V, p=_q[i])) for i in range(_k)]
    _trials.append((_x, _q, _p, _ri(0, 1 << 30)))
_same_rng_case("the same tokens as the library under the same seed", _trials)
### END HIDDEN TESTS

# %% [markdown]
# **Multi-token prediction and EAGLE.** A separate draft model has to be trained, served and kept in step with the
# target. Two ways to draft with the target's own features instead:
#
# - **Multi-token prediction (MTP)** (DeepSeek-V3): an extra small block on top of the target predicts the token
#   after next, from the target's final hidden state for token t combined with the embedding of token t + 1. At
#   inference the target verifies the head's guess in its next pass ("self-speculation"), so each pass yields 1 or
#   2 tokens. `infopt.llm.mtp` trains such a head on the frozen tiny target in about half a minute
#   (`python -m infopt.llm.mtp`); the head it trained ships with the library, and `load_mtp_head` loads it:
# - **EAGLE** (Li et al. 2024) drafts autoregressively at the *feature* level: a one-layer head takes the target's
#   second-to-top hidden states and the next token's embedding and predicts the next hidden state, from which the
#   target's own lm_head gives a token; EAGLE-2 grows a tree of candidates and the target verifies the tree in one
#   pass with a tree attention mask. MTP's head predicts one fixed offset and is trained with the model; EAGLE's
#   head is trained afterwards and chained for several tokens.

# %%
from infopt.llm.mtp import load_mtp_head, self_speculative_generate

head = load_mtp_head(target)
mtp_run = self_speculative_generate(target, head, spec_prompt, 48, stop_at_eos=False)
print(f"MTP self-speculation, greedy: same tokens as plain greedy: {mtp_run.tokens == plain.tokens}; "
      f"{mtp_run.target_passes} target passes ({plain.forward_passes / mtp_run.target_passes:.2f}x fewer)")
mtp_hot = self_speculative_generate(target, head, spec_prompt, 48, hot, seed=0, stop_at_eos=False)
print(f"MTP self-speculation, temperature 0.8: {mtp_hot.target_passes} target passes "
      f"({plain_hot.forward_passes / mtp_hot.target_passes:.2f}x fewer), the head's guess accepted "
      f"{mtp_hot.acceptance_rate:.0%} of the time")

# %% [markdown]
# **How the real systems do it.** Hugging Face's `generate(..., assistant_model=draft)` is assisted generation
# (draft-and-verify; `prompt_lookup_num_tokens` drafts by copying n-grams of the prompt). vLLM's
# `speculative_config` takes a draft model, n-gram lookup, EAGLE / EAGLE-3 heads or DeepSeek's MTP layers
# (`"method": "deepseek_mtp"`), with the rejection sampler you just wrote. TensorRT-LLM supports draft-target
# models, Medusa, ReDrafter, EAGLE (1–3), lookahead decoding and MTP for DeepSeek-V3.

# %% [markdown]
# ## 6. Long context and the memory arithmetic of real models
#
# The KV cache grows with every token of every sequence, and at long context it outweighs the model. The configs
# of real models, as data (`infopt.llm.memory.MODELS`, from their published `config.json` files), give the
# numbers that size it: layers, KV heads, head dimension, and the two tricks that change the formula:
#
# - **sliding-window layers** (Gemma 3: five local layers with a 1024-token window for every global layer) store
#   the last `window` tokens, whatever the context;
# - **multi-head latent attention (MLA)** (DeepSeek-V2/V3) caches one compressed latent of `kv_lora_rank` numbers
#   plus a small decoupled RoPE key per token and layer, instead of K and V per KV head.

# %%
from infopt.llm.memory import TINY, describe, kv_cache_bytes, kv_memory_figure, max_context_table

for spec in MODELS.values():
    print(describe(spec, "bf16"))

# %% [markdown]
# The same formula sizes our tiny model's caches; check it against what `ContiguousKVCache` and `PagedKVCache`
# allocate:

# %%
tiny = TINY["target"]
c = ContiguousKVCache(TARGET_CONFIG, max_seqs=3, max_len=256)
p = PagedKVCache(TARGET_CONFIG, num_blocks=48, block_size=16)
print("contiguous, 3 x 256 tokens:", c.bytes_reserved(), "bytes allocated; formula:",
      kv_cache_bytes(tiny, 256, "fp32", batch=3))
print("paged, 48 blocks of 16:    ", p.bytes_reserved(), "bytes allocated; formula:",
      kv_cache_bytes(tiny, 48 * 16, "fp32"))

# %% [markdown]
# From 4K to 1M tokens, at FP16, FP8 and INT4 (weights and KV at the same precision), against the memory of an
# 80 GB (H100) and a 141 GB (H200) GPU:

# %%
kv_memory_figure(["Llama 3 8B", "Llama 3 70B", "Gemma 3 27B", "DeepSeek-V3"]).show()
for row in max_context_table(["Llama 3 8B", "Llama 3 70B", "Qwen3 8B", "Gemma 3 27B"], dtypes=("fp16", "fp8")):
    print(f"{row['model']:14} {row['dtype']:5} weights {row['weights_gb']:6.1f} GB; longest context of one sequence: "
          + ", ".join(f"{k.removeprefix('max context ')} {v:,}" for k, v in row.items() if k.startswith("max context")))

# %% [markdown]
# Read the figure with the memory-bound decode of section 1 in mind: every decode step reads the whole KV cache of
# every sequence in the batch, so at long context the cache, not the weights, sets the time per token. That is
# why long-context serving leans on GQA and MLA (fewer bytes per token), FP8 KV caches (vLLM's
# `kv_cache_dtype="fp8"`, TensorRT-LLM's FP8 KV cache), sliding windows, paging (no reserved tails), and attention
# kernels that stream K/V at full memory bandwidth (FlashAttention, FlashDecoding's split over the sequence).

# %% [markdown]
# ### Exercise 6 — the KV-cache bytes of a real model (2 points)
#
# Write `kv_cache_bytes(spec, context_len, dtype, batch=1)`: the bytes of KV cache that `batch` sequences of
# `context_len` tokens each need, for the model `spec` (a `ModelSpec`, e.g. `MODELS["Llama 3 8B"]`), with the cache
# stored at `dtype`, a key of `DTYPE_BYTES` (`"fp32"`, `"fp16"`, `"bf16"`, `"fp8"`, `"int4"`; INT4 is half a byte).
#
# - GQA (`spec.attention == "gqa"`): per token, every layer stores a K and a V vector of `head_dim` values for each of
#   its `n_kv_heads` KV heads — the KV heads, not the `n_heads` query heads.
# - MLA (`spec.attention == "mla"`, DeepSeek): per token, every layer stores one latent of
#   `kv_lora_rank + qk_rope_head_dim` values (the compressed K/V and the decoupled RoPE key), with no separate K and V.
# - Sliding windows (GQA models): `spec.local_layers` of the layers are sliding-window layers, which keep only the
#   last `min(context_len, spec.sliding_window)` tokens; the other layers keep all `context_len`
#   (`sliding_window` is 0 and `local_layers` 0 when the model has none).
# - Everything times `batch`. Return the bytes as a float.
#
# Do not call the library's formula (`infopt.llm.memory.kv_cache_bytes`, or `kv_bytes_per_token` of
# `infopt.llm.kv_cache`): write it yourself. The tests compare with the library on every model of `MODELS` from 4K
# to 1M tokens of context, and on random specs at every dtype.

# %% solution=true grade_id="kv_cache_bytes"
from infopt.llm.memory import DTYPE_BYTES, ModelSpec


def kv_cache_bytes(spec: ModelSpec, context_len: int, dtype: str, batch: int = 1) -> float:
    """KV-cache bytes of `batch` sequences of `context_len` tokens: per-token values per layer x tokens kept x bytes."""
    ### BEGIN SOLUTION
    nbytes = DTYPE_BYTES[dtype]
    if spec.attention == "mla":
        return float((spec.kv_lora_rank + spec.qk_rope_head_dim) * spec.n_layers * context_len * nbytes * batch)
    local = spec.local_layers
    tokens = (spec.n_layers - local) * context_len + local * min(context_len, spec.sliding_window)
    return float(2 * spec.n_kv_heads * spec.head_dim * tokens * nbytes * batch)
    ### END SOLUTION


# %% grade_id="kv_cache_bytes_test" points=2
import dataclasses
import math

from infopt.grading import call_student, case, check_true, forbidding
from infopt.llm import memory as _memory

# While your function runs, the library's formula raises: write it yourself.
_kv_cache_bytes = forbidding(kv_cache_bytes, "infopt.llm.memory:kv_cache_bytes",
                             "infopt.llm.kv_cache:kv_bytes_per_token", exercise="the KV-cache formula")
_KV_DTYPES = ("fp32", "fp16", "bf16", "fp8", "int4")


def _kv_spec(name: str, base: str = "Llama 3 8B", **fields) -> "_memory.ModelSpec":
    """A spec of a real model's kind with some of its numbers replaced (a fresh name that says nothing)."""
    return dataclasses.replace(_memory.MODELS[base], name=name, source="test", **fields)


def _show_spec(spec) -> str:
    out = (f"ModelSpec(attention={spec.attention!r}, n_layers={spec.n_layers}, n_heads={spec.n_heads}, "
           f"n_kv_heads={spec.n_kv_heads}, head_dim={spec.head_dim}")
    if spec.attention == "mla":
        out += f", kv_lora_rank={spec.kv_lora_rank}, qk_rope_head_dim={spec.qk_rope_head_dim}"
    return out + f", sliding_window={spec.sliding_window}, local_layers={spec.local_layers})"


def _check_kv(label: str, spec, context_len: int, dtype: str, batch: int | None, hidden: bool) -> None:
    """Compare with the library on one input (batch None: the call leaves batch at its default, 1)."""
    call = f"kv_cache_bytes(spec, context_len={context_len}, dtype={dtype!r}" + (f", batch={batch})" if batch else ")")
    args = (spec, context_len, dtype) + ((batch,) if batch else ())
    with case(label, show=lambda: f"{call} with spec = {_show_spec(spec)}", hidden=hidden):
        want = _memory.kv_cache_bytes(*args)
        got = call_student(_kv_cache_bytes, *args, name="kv_cache_bytes")
        check_true(isinstance(got, float), f"{call} must return the number of bytes (a float), got {got!r} "
                   f"({type(got).__name__})")
        hint = ""
        if spec.attention == "gqa" and spec.local_layers and context_len:
            window = min(context_len, spec.sliding_window)
            kept = (spec.n_layers - spec.local_layers) * context_len + spec.local_layers * window
            if math.isclose(float(got), want / kept * spec.n_layers * window, rel_tol=1e-9):
                hint = (f"; that is every layer capped at the window, but only the {spec.local_layers} "
                        "sliding-window layers are: the other layers keep all context_len tokens")
        check_true(math.isclose(float(got), want, rel_tol=1e-9),
                   f"{call}: expected {want:,.1f} bytes, got {float(got):,.1f}"
                   + (f" ({float(got) / want:.4g} times the right value)" if want and got else "") + hint)


def _kv_rule_cases(ri, hidden: bool) -> None:
    """One case per rule, in an order where each stored mistake first fails the case of its own rule."""
    kv, layers, d = ri(1, 8), ri(2, 40), 16 * ri(1, 8)
    ctx = ri(100, 5000)
    _check_kv("multi-head attention (n_kv_heads == n_heads): a K and a V vector per KV head", _kv_spec(
        "model A", n_layers=layers, n_heads=kv, n_kv_heads=kv, head_dim=d), ctx, "fp16", 1, hidden)
    g = ri(2, 8)
    _check_kv("grouped-query attention: the KV heads, not the n_heads query heads", _kv_spec(
        "model B", n_layers=layers, n_heads=g * kv, n_kv_heads=kv, head_dim=d), ctx, "fp16", 1, hidden)
    for dt in _KV_DTYPES:
        _check_kv(f"dtype {dt}: bytes per value from DTYPE_BYTES (INT4 is half a byte)", _kv_spec(
            "model C", n_layers=layers, n_heads=g * kv, n_kv_heads=kv, head_dim=d), ri(1, 999) * 2 + 1, dt, 1, hidden)
    _check_kv("a batch of sequences: everything times batch", _kv_spec(
        "model D", n_layers=layers, n_heads=g * kv, n_kv_heads=kv, head_dim=d), ctx, "fp8", ri(2, 64), hidden)
    rank, rope = 64 * ri(1, 8), 16 * ri(1, 4)
    _check_kv("MLA: one latent of kv_lora_rank + qk_rope_head_dim values per token and layer", _kv_spec(
        "model E", base="DeepSeek-V3", n_layers=layers, n_heads=ri(8, 128), n_kv_heads=ri(8, 128), head_dim=d + 64,
        kv_lora_rank=rank, qk_rope_head_dim=rope), ctx, "bf16", 1, hidden)
    window = 128 * ri(2, 8)
    _check_kv("MLA with sliding-window fields set: windows are a GQA feature, every MLA layer keeps every token",
              _kv_spec("model G", base="DeepSeek-V3", n_layers=layers, kv_lora_rank=rank, qk_rope_head_dim=rope,
                       sliding_window=window, local_layers=ri(1, layers - 1)), window * ri(2, 8) + ri(1, 99),
              "bf16", 1, hidden)
    local = ri(1, layers - 1)
    swa = _kv_spec("model F", n_layers=layers, n_heads=g * kv, n_kv_heads=kv, head_dim=d, sliding_window=window,
                   local_layers=local)
    _check_kv("a context longer than the window: sliding-window layers keep min(context_len, sliding_window) tokens",
              swa, window * ri(2, 64) + ri(1, 99), "fp16", 1, hidden)
    _check_kv("a context shorter than the window: sliding-window layers keep min(context_len, sliding_window) tokens",
              swa, ri(1, window - 1), "fp16", 1, hidden)


_visible = np.random.default_rng(2026)  # fixed numbers for the visible cases (the hidden ones are drawn per grading)
_kv_rule_cases(lambda lo, hi: int(_visible.integers(lo, hi + 1)), hidden=False)
for _name, _spec in _memory.MODELS.items():  # the real models, names shown: these are the lesson's table
    for _ctx, _dt in ((4096, "fp16"), (131072, "fp8"), (1 << 20, "int4")):
        _check_kv(f"{_name} at {_ctx:,} tokens, {_dt}", _spec, _ctx, _dt, None, hidden=False)
    _check_kv(f"{_name}, a batch of 8 at 32K", _spec, 32768, "bf16", 8, hidden=False)
### BEGIN HIDDEN TESTS
from infopt.grading import grading_rng

_rng = grading_rng(6)


def _ri(lo: int, hi: int) -> int:
    """A random int in [lo, hi]."""
    return int(_rng.integers(lo, hi + 1))


_kv_rule_cases(_ri, hidden=True)
for _trial in range(12):
    _layers, _kvh = _ri(1, 96), _ri(1, 16)
    if _trial % 3 == 2:
        _spec = _kv_spec(f"model R{_trial}", base="DeepSeek-V3", n_layers=_layers, n_kv_heads=_kvh, head_dim=64,
                         kv_lora_rank=_ri(1, 1024), qk_rope_head_dim=_ri(0, 128))
    else:
        _local = _ri(0, _layers) if _trial % 3 == 1 else 0
        _spec = _kv_spec(f"model R{_trial}", n_layers=_layers, n_heads=_kvh * _ri(1, 8), n_kv_heads=_kvh,
                         head_dim=_ri(1, 256), sliding_window=_ri(1, 8192) if _local else 0, local_layers=_local)
    _check_kv(f"random spec #{_trial}", _spec, _ri(0, 1 << 21), _KV_DTYPES[_trial % 5], _ri(1, 16), hidden=True)
### END HIDDEN TESTS

# %% [markdown]
# ## 7. The parallelism forms, counted and run
#
# When the model or its cache does not fit one GPU, it is split, and every split sends bytes:
#
# | form | what is split | what crosses the links each step |
# |---|---|---|
# | data (DP) | the batch; each rank holds the whole model | training: the gradients, all-reduced; inference: nothing |
# | tensor (TP, Megatron-LM) | each layer's weight matrices: column-parallel, then row-parallel | 2 all-reduces per layer of tokens × hidden activations |
# | pipeline (PP) | the layers, into stages | the activations at each stage boundary |
# | expert (EP, MoE) | the experts of each MoE layer | an all-to-all of tokens × top-k × hidden, out and back |
#
# A ring all-reduce of B bytes over n ranks sends 2(n − 1)/n · B bytes per rank. For Llama 3 70B on one 8-GPU
# node, and DeepSeek-V3 across four nodes:

# %%
from infopt.llm.parallel import CLUSTERS, comm_figure, comm_table
from infopt.llm.parallel_run import run_parallel_demo

for model, cluster in (("Llama 3 70B", "1 node, 8 GPUs: TP 8"),
                       ("DeepSeek-V3", "4 nodes, 32 GPUs: TP 8 x PP 4, EP 32")):
    print(f"{model} on {cluster}, a forward pass of 4096 tokens:")
    for row in comm_table(model, cluster, tokens=4096):
        if row["degree"] == 1:   # not split this way: nothing crosses a link
            print(f"  {row['form']:9} degree  1: not split, no traffic   [{row['formula']}]")
            continue
        print(f"  {row['form']:9} degree {row['degree']:>2}: {row['bytes_per_rank'] / 1e9:8.3f} GB per rank over "
              f"{row['link']} links ({row['link_gbs']:.0f} GB/s) = {row['seconds'] * 1e3:7.2f} ms   [{row['formula']}]")
comm_figure("Llama 3 70B").show()

# %% [markdown]
# **Tensor parallelism, for real.** `run_parallel_demo` starts two processes that talk through `torch.distributed`
# (the gloo backend, on this machine). Each holds half of every layer of the tiny target: the attention heads and
# the MLP's gate/up columns (column-parallel, no communication), then the matching rows of the output and down
# projections (row-parallel), whose partial sums one all-reduce adds up. It compares the result with the
# single-process model and counts the bytes against the formula, once with gloo's all-reduce and once with a ring
# written by hand. Then it measures **overlap**: an all-reduce started with `async_op=True` while a matmul runs,
# against compute-then-communicate.

# %%
tp_result, overlap_result = run_parallel_demo(world_size=2, buffer_mb=4.0, repeats=3)
print(tp_result.report())
print(overlap_result.report())

# %% [markdown]
# **How the real systems do it.** vLLM's `tensor_parallel_size`, `pipeline_parallel_size` and
# `enable_expert_parallel`, TensorRT-LLM's `tp_size` / `pp_size` / `moe_ep_size`, and Hugging Face's `tp_plan="auto"`
# all implement these splits, with NCCL carrying the all-reduces and all-to-alls on GPUs; overlapping them with
# compute (as measured here, and in kernels that fuse a GEMM with its all-reduce) is where much of the speed at
# scale comes from.
#
# ## 8. Disaggregated serving
#
# In one engine, prefill and decode share every step: a long prompt stalls the decodes batched with it (TPOT
# spikes), and a full decode batch delays new prompts (TTFT grows). **Disaggregated serving** (DistServe, OSDI
# 2024; Splitwise, ISCA 2024) runs prefill on some machines and decode on others; each request's KV cache crosses
# the link once, at `kv_bytes / bandwidth`. With the same scheduler and section 4's H200 cost model (its link:
# 50 GB/s, one 400 Gb/s NIC), compare two machines doing both (whole prefills, and chunked under a budget of 128
# tokens) against one prefill and one decode machine:

# %%
from infopt.llm.disaggregated import compare_disaggregated

disagg_trace = poisson_trace(48, rate_per_s=40.0, seed=4, prompt_len=(64, 320), output_len=(16, 96))
results = compare_disaggregated(disagg_trace, cost, machines=2, num_blocks=2048, token_budget=128)
print(f"{'layout':18} {'tok/s':>7} {'TTFT p99':>9} {'TPOT p50':>9} {'TPOT p99':>9}")
for name, s in results.items():
    print(f"{name:18} {s['throughput_tok_s']:7.0f} {s['ttft_p99'] * 1e3:7.1f}ms {s['tpot_p50'] * 1e3:7.2f}ms "
          f"{s['tpot_p99'] * 1e3:7.2f}ms")

# %% [markdown]
# The decode machine's TPOT no longer carries prefills; the price is the transfer and a prefill pool that has to
# keep up with the arrivals. vLLM's disaggregated prefill (KV connectors such as NIXL and LMCache), TensorRT-LLM's
# disaggregated serving and NVIDIA Dynamo put this into production; SGLang and Mooncake do the same.
#
# ## Wrap-up
#
# * Decode is memory-bound: every step reads all the weights and all the cache, whatever the batch.
# * The KV cache trades memory for a step that computes one token; paging removes the reserved tails and lets
#   sequences share blocks.
# * Continuous batching keeps the step full; the batch limit and the token budget trade throughput against TTFT
#   and TPOT, and a latency target picks the point.
# * Speculation makes one step verify several tokens; the accept/reject rule keeps the target's distribution.
# * At long context the cache dominates: GQA, MLA, windows and FP8 shrink it; the parallel forms split what is left,
#   at a cost in bytes that overlap can hide.
#
# **Where the kernels are.** This unit schedules and counts; unit 10 writes the kernels underneath. Paged attention
# and flash-decoding as Triton kernels are unit 10's section 6, long-context kernels its section 7, the CuTe layout
# algebra that CUTLASS's GEMM and attention kernels are written in its section 8, and what a new GPU generation
# (Hopper, Blackwell) changes for a kernel (tile sizes, occupancy, FP8 and FP4 tensor cores) its section 11.

# %%
print(f"notebook ran in {time.perf_counter() - _T0:.1f} s")
