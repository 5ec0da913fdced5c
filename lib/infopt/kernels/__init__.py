"""Unit 10: kernel engineering with Triton, and the machinery around it.

Importing this package imports no torch, triton or jax; each submodule imports what it needs:

- `backend`: Triton imported in the right mode (its interpreter on a CPU machine, compiled on a GPU);
- `trace`: every `tl.load` / `tl.store` of an interpreted launch recorded (out-of-bounds accesses, memory traffic);
- `testing`: the kernel test harness (float64 references, tolerances by dtype, poisoned outputs);
- `elementwise`, `softmax`, `norms`, `matmul`, `int4`: the Triton kernels of the first half;
- `attention`, `decoding`, `long_context`: flash attention, flash-decoding, paged decode, long-context memory;
- `layout`: CuTe's layout algebra; `pallas`: the same kernels in JAX Pallas;
- `collectives`: ring all-reduce and friends over gloo; `gpu_figures`: H200 measurements as data.
"""

# Every function here that computes softmax(q k^T / sqrt(d)) v, as `forbidding` targets: an exercise elsewhere in
# the course that asks for attention (unit 08's cached and paged attention) forbids all of them, not only its own.
ATTENTION_ROUTES: tuple[str, ...] = ("infopt.kernels.attention:*", "infopt.kernels.decoding:*",
                                     "infopt.kernels.long_context:naive_attention",
                                     "infopt.kernels.long_context:chunked_attention")
