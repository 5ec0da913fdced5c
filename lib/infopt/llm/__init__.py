"""LLM inference basics (unit 08): a tiny Llama in plain torch and the machinery that serves it.

Modules: `tokenizer` (bytes as tokens), `model` (the Llama architecture, the tiny configs, `load_model`), `train`
(regenerates the shipped weights in `data/`), `sampling` (greedy, temperature, top-k, top-p), `kv_cache` (the cache
protocol, `attend_with_cache`, the contiguous cache), `generate` (one sequence, with or without a cache), `hf`
(the same weights in Hugging Face's `LlamaForCausalLM`, the reference nobody here wrote), and the modules built on
them: `paged`, `traces`, `scheduler`, `speculative`, `mtp`, `memory`, `parallel`. torch is imported only by the
submodules, never by this package.
"""
