"""Tensor parallelism run for real: the tiny target model split over local processes with torch.distributed (gloo).

Megatron-LM's split of one decoder layer over n ranks, rank r holding 1/n of every matrix:
  - attention: q_proj, k_proj, v_proj column-parallel (rank r computes query heads r*Hq/n .. and their KV heads
    r*Hkv/n ..: the GQA groups stay whole), o_proj row-parallel (the input columns of those heads); each rank's
    o_proj output is a partial sum -> ONE all-reduce;
  - MLP: gate_proj and up_proj column-parallel (output columns r*F/n ..), down_proj row-parallel (those input
    rows) -> partial sums -> ONE all-reduce.
So a layer costs 2 all-reduces of [B, T, dim] in the forward pass, nothing else: the element-wise SiLU and product
and the per-head attention need no communication. Embeddings, norms and lm_head are replicated.

Every all-reduce runs twice, by gloo's `all_reduce` and by a ring written here from send/recv that counts the bytes
it really sends (2 (n - 1) / n of the buffer per rank), so the count can be compared with
`infopt.llm.parallel.tp_bytes`. `measure_overlap` times compute overlapped with `all_reduce(async_op=True)` against
compute then all-reduce, alternating in one run.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
import torch.distributed as dist

from .memory import spec_from_tiny
from .model import TARGET_CONFIG, TinyLlama, apply_rope, grouped_attention, load_model, rms_norm, rope_cos_sin
from .parallel import tp_bytes
from ..runtime.processes import free_port, spawn_ranks

__all__ = ["TPResult", "OverlapResult", "free_port", "spawn_ranks", "ring_all_reduce_", "shard_layer",
           "tp_hidden", "run_tensor_parallel", "measure_overlap", "run_parallel_demo", "overlap_rank_task",
           "overlap_payload", "overlap_result"]


@dataclass(frozen=True)
class TPResult:
    """What `run_tensor_parallel` measured: errors against the single-process model, and bytes counted vs formula."""

    world_size: int
    weights: str                    # "trained" (data/target.npz) or "random" (TinyLlama(TARGET_CONFIG, seed))
    tokens: int                     # batch * seq_len tokens in the step
    all_reduces: int                # all-reduces each rank ran per forward pass
    max_abs_err: float              # gloo all_reduce run vs the single-process model (hidden states)
    max_abs_err_ring: float         # the hand-written ring run vs the single-process model
    max_rank_disagreement: float    # largest difference between ranks' outputs (0: all ranks hold the same result)
    all_reduced_bytes: int          # bytes of the tensors handed to all_reduce, per rank (counted)
    formula_buffer_bytes: float     # n_layers * 2 * tokens * dim * 4
    ring_bytes_sent: int            # bytes the ring sent, per rank (counted at each send)
    formula_ring_bytes: float       # infopt.llm.parallel.tp_bytes: n_layers * 2 * ring(tokens * dim * 4, n)
    seconds: float                  # wall time of the whole run, process start included

    def report(self) -> str:
        """A few lines for a notebook."""
        return (f"TP over {self.world_size} processes ({self.weights} weights, {self.tokens} tokens): max |TP - "
                f"single| = {self.max_abs_err:.2e} (gloo), {self.max_abs_err_ring:.2e} (ring)\n"
                f"{self.all_reduces} all-reduces per rank; tensor bytes all-reduced {self.all_reduced_bytes:,} "
                f"(formula {self.formula_buffer_bytes:,.0f}); ring sent {self.ring_bytes_sent:,} bytes per rank "
                f"(formula 2(n-1)/n * buffer = {self.formula_ring_bytes:,.0f}); {self.seconds:.1f} s")


@dataclass(frozen=True)
class OverlapResult:
    """Medians over the repeats of each way, measured alternately in one run (rank 0's clock)."""

    world_size: int
    buffer_bytes: int
    compute_s: float                # the compute alone
    comm_s: float                   # the all-reduce alone
    sequential_s: float             # compute, then a blocking all-reduce
    overlapped_s: float             # all_reduce(async_op=True), compute, work.wait()
    repeats: int

    @property
    def speedup(self) -> float:
        """sequential / overlapped (1.0 = no gain; the ideal is (compute + comm) / max(compute, comm))."""
        return self.sequential_s / self.overlapped_s

    @property
    def ideal_speedup(self) -> float:
        """(compute + comm) / max(compute, comm): what perfect overlap would give."""
        return (self.compute_s + self.comm_s) / max(self.compute_s, self.comm_s)

    def report(self) -> str:
        """A few lines for a notebook, with why the gain may be small here."""
        return (f"all-reduce of {self.buffer_bytes / 2**20:.0f} MiB over {self.world_size} processes: compute "
                f"{self.compute_s * 1e3:.1f} ms, all-reduce {self.comm_s * 1e3:.1f} ms; sequential "
                f"{self.sequential_s * 1e3:.1f} ms, overlapped {self.overlapped_s * 1e3:.1f} ms -> "
                f"{self.speedup:.2f}x (perfect overlap: {self.ideal_speedup:.2f}x). On a CPU, gloo's reduction and "
                f"copies run on the same cores as the compute, so overlap only hides the time spent waiting.")


# --- the collective, by hand ----------------------------------------------------------------------------------------
def ring_all_reduce_(tensor: torch.Tensor) -> int:
    """Sum `tensor` over the group in place with a ring (reduce-scatter, then all-gather) built from send/recv;
    return the bytes this rank sent: 2 (n - 1) chunks of about 1/n of the tensor."""
    n, r = dist.get_world_size(), dist.get_rank()
    if n == 1:
        return 0
    if not tensor.is_contiguous():
        raise ValueError("ring_all_reduce_ sums in place: pass a contiguous tensor")
    chunks = list(tensor.view(-1).tensor_split(n))
    right, left = (r + 1) % n, (r - 1) % n
    sent = 0

    def exchange(send_idx: int, recv_idx: int) -> torch.Tensor:
        nonlocal sent
        incoming = torch.empty_like(chunks[recv_idx])
        req = dist.isend(chunks[send_idx], right)
        dist.recv(incoming, left)
        req.wait()
        sent += chunks[send_idx].numel() * chunks[send_idx].element_size()
        return incoming

    for step in range(n - 1):                   # after this, chunk (r + 1) % n holds the full sum
        recv_idx = (r - step - 1) % n
        chunks[recv_idx].add_(exchange((r - step) % n, recv_idx))
    for step in range(n - 1):                   # pass the summed chunks round the ring
        recv_idx = (r - step) % n
        chunks[recv_idx].copy_(exchange((r - step + 1) % n, recv_idx))
    return sent


# --- the model, split -----------------------------------------------------------------------------------------------
def shard_layer(state: dict[str, torch.Tensor], layer: int, rank: int, n: int, n_heads: int, n_kv_heads: int,
                head_dim: int) -> dict[str, torch.Tensor]:
    """Rank `rank`'s slices of layer `layer`'s weights (nn.Linear weights are [out, in]): q/k/v/gate/up rows
    (column-parallel: output features), o/down columns (row-parallel: input features); norms replicated."""
    if n_heads % n or n_kv_heads % n:
        raise ValueError(f"tensor parallelism over {n} ranks splits whole heads: {n_heads} query heads and "
                         f"{n_kv_heads} KV heads must both be multiples of {n}")
    p = f"layers.{layer}."
    hq, hkv = n_heads // n, n_kv_heads // n
    q_rows = slice(rank * hq * head_dim, (rank + 1) * hq * head_dim)
    kv_rows = slice(rank * hkv * head_dim, (rank + 1) * hkv * head_dim)
    ffn = state[p + "mlp.gate_proj.weight"].shape[0]
    if ffn % n:
        raise ValueError(f"the MLP width {ffn} must be a multiple of the {n} ranks")
    f_rows = slice(rank * ffn // n, (rank + 1) * ffn // n)
    return {
        "ln1": state[p + "input_layernorm.weight"], "ln2": state[p + "post_attention_layernorm.weight"],
        "q": state[p + "self_attn.q_proj.weight"][q_rows], "k": state[p + "self_attn.k_proj.weight"][kv_rows],
        "v": state[p + "self_attn.v_proj.weight"][kv_rows], "o": state[p + "self_attn.o_proj.weight"][:, q_rows],
        "gate": state[p + "mlp.gate_proj.weight"][f_rows], "up": state[p + "mlp.up_proj.weight"][f_rows],
        "down": state[p + "mlp.down_proj.weight"][:, f_rows],
    }


def tp_hidden(model: TinyLlama, tokens: torch.Tensor, rank: int, n: int,
              all_reduce: Callable[[torch.Tensor], None]) -> torch.Tensor:
    """The model's final hidden states [B, T, dim] computed with rank `rank`'s 1/n of every layer, calling
    `all_reduce` (an in-place sum over the ranks) once after attention and once after the MLP of each layer."""
    cfg = model.config
    state = model.state_dict()
    b, t = tokens.shape
    positions = torch.arange(t).expand(b, t)
    cos, sin = rope_cos_sin(positions, cfg.head_dim, cfg.rope_theta)
    mask = positions[:, :, None] >= positions[:, None, :]
    hq, hkv = cfg.n_heads // n, cfg.n_kv_heads // n
    x = model.embed_tokens(tokens)
    for i in range(cfg.n_layers):
        w = shard_layer(state, i, rank, n, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim)
        h = rms_norm(x, w["ln1"], cfg.norm_eps)
        q = (h @ w["q"].T).view(b, t, hq, cfg.head_dim).transpose(1, 2)
        k = (h @ w["k"].T).view(b, t, hkv, cfg.head_dim).transpose(1, 2)
        v = (h @ w["v"].T).view(b, t, hkv, cfg.head_dim).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        a = grouped_attention(q, k, v, mask).transpose(1, 2).reshape(b, t, hq * cfg.head_dim)
        partial = (a @ w["o"].T).contiguous()            # row-parallel o_proj: this rank's share of the sum
        all_reduce(partial)
        x = x + partial
        h = rms_norm(x, w["ln2"], cfg.norm_eps)
        partial = ((torch.nn.functional.silu(h @ w["gate"].T) * (h @ w["up"].T)) @ w["down"].T).contiguous()
        all_reduce(partial)
        x = x + partial
    return model.norm(x)


def _build_model(weights: str, seed: int) -> TinyLlama:
    return load_model("target") if weights == "trained" else TinyLlama(TARGET_CONFIG, seed=seed)


def _tp_task(rank: int, world_size: int, payload: dict) -> dict:
    model = _build_model(payload["weights"], payload["seed"])
    tokens = payload["tokens"]
    counted = {"buffer": 0, "calls": 0, "ring_sent": 0}

    def gloo_all_reduce(t: torch.Tensor) -> None:
        counted["buffer"] += t.numel() * t.element_size()
        counted["calls"] += 1
        dist.all_reduce(t)

    def ring(t: torch.Tensor) -> None:
        counted["ring_sent"] += ring_all_reduce_(t)

    with torch.no_grad():
        out = tp_hidden(model, tokens, rank, world_size, gloo_all_reduce)
        out_ring = tp_hidden(model, tokens, rank, world_size, ring)
    return {"out": out.numpy(), "out_ring": out_ring.numpy(), **counted}   # numpy: pickled by value


def _tp_payload(batch: int, seq_len: int, seed: int, weights: str | None) -> dict:
    if weights is None:
        weights = "trained" if _trained_weights_exist() else "random"
    if weights not in ("trained", "random"):
        raise ValueError(f"weights must be 'trained' or 'random', got {weights!r}")
    for name, v in (("batch", batch), ("seq_len", seq_len)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be an int >= 1, got {v!r}")
    if seq_len > TARGET_CONFIG.max_seq_len:
        raise ValueError(f"seq_len must be <= the model's max_seq_len {TARGET_CONFIG.max_seq_len}, got {seq_len}")
    tokens = torch.randint(0, 256, (batch, seq_len), generator=torch.Generator().manual_seed(seed))
    return {"weights": weights, "seed": seed, "tokens": tokens}


def _tp_result(world_size: int, payload: dict, outs: list[dict], seconds: float) -> TPResult:
    model = _build_model(payload["weights"], payload["seed"])
    tokens = payload["tokens"]
    with torch.no_grad():
        ref = model.hidden(tokens).numpy()
    cfg = model.config
    n_tokens = tokens.numel()
    buffer = n_tokens * cfg.dim * 4                     # float32 activations
    return TPResult(
        world_size=world_size, weights=payload["weights"], tokens=n_tokens, all_reduces=outs[0]["calls"],
        max_abs_err=float(np.abs(outs[0]["out"] - ref).max()),
        max_abs_err_ring=float(np.abs(outs[0]["out_ring"] - ref).max()),
        max_rank_disagreement=max(float(np.abs(o[key] - outs[0][key]).max()) for o in outs
                                  for key in ("out", "out_ring")),
        all_reduced_bytes=outs[0]["buffer"], formula_buffer_bytes=float(cfg.n_layers * 2 * buffer),
        ring_bytes_sent=max(o["ring_sent"] for o in outs),
        formula_ring_bytes=tp_bytes(spec_from_tiny(cfg, "tiny target"), world_size, n_tokens, "fp32"),
        seconds=seconds)


def run_tensor_parallel(world_size: int = 2, batch: int = 2, seq_len: int = 16, seed: int = 0,
                        weights: str | None = None, timeout_s: float = 60.0) -> TPResult:
    """Run the tiny target model tensor-parallel over `world_size` processes (gloo, localhost), once with gloo's
    all_reduce and once with the counting ring, on seeded random tokens; compare both with the single-process
    model's hidden states and the bytes with the formula. weights: "trained" (data/target.npz, the default when it
    exists) or "random" (TinyLlama(TARGET_CONFIG, seed)). Most of the seconds are the processes importing torch."""
    start = time.perf_counter()
    payload = _tp_payload(batch, seq_len, seed, weights)
    outs = spawn_ranks(_tp_task, world_size, payload, timeout_s)
    return _tp_result(world_size, payload, outs, time.perf_counter() - start)


def _trained_weights_exist() -> bool:
    from .model import DATA_DIR

    return (DATA_DIR / "target.npz").exists()


# --- overlap --------------------------------------------------------------------------------------------------------
def overlap_rank_task(rank: int, world_size: int, payload: dict) -> dict:
    """On each rank of a running gloo group (payload from `overlap_payload`): median seconds of "compute",
    "comm", "sequential" and "overlapped", measured alternately; unit 10's collectives demo runs it too."""
    buf = torch.zeros(payload["numel"], dtype=torch.float32)   # zeros: repeated sums stay finite
    a = torch.randn(payload["matmul_n"], payload["matmul_n"], generator=torch.Generator().manual_seed(rank))

    def matmuls(k: int) -> None:
        for _ in range(k):
            torch.mm(a, a)

    def timed(fn: Callable[[], None]) -> float:
        dist.barrier()
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    for _ in range(2):                                   # warm up gloo's connections and the matmul
        dist.all_reduce(buf)
        matmuls(1)
    comm = statistics.median(timed(lambda: dist.all_reduce(buf)) for _ in range(5))
    k = 1          # size the compute like the all-reduce (where overlap helps most): a few rounds of k *= comm / t(k)
    for _ in range(3):
        t_k = statistics.median(timed(lambda: matmuls(k)) for _ in range(3))
        k = max(1, min(10_000, round(k * comm / max(t_k, 1e-6))))
    k_t = torch.tensor([k], dtype=torch.int64)          # every rank must run the same k
    dist.all_reduce(k_t, op=dist.ReduceOp.MAX)
    k = int(k_t)

    def sequential() -> None:
        matmuls(k)
        dist.all_reduce(buf)

    def overlapped() -> None:
        work = dist.all_reduce(buf, async_op=True)
        matmuls(k)
        work.wait()

    times: dict[str, list[float]] = {"compute": [], "comm": [], "sequential": [], "overlapped": []}
    for i in range(payload["repeats"]):
        order = [("sequential", sequential), ("overlapped", overlapped)]
        for name, fn in (order if i % 2 == 0 else order[::-1]):   # alternate which goes first
            times[name].append(timed(fn))
        times["compute"].append(timed(lambda: matmuls(k)))
        times["comm"].append(timed(lambda: dist.all_reduce(buf)))
    return {name: statistics.median(ts) for name, ts in times.items()}


def overlap_payload(buffer_mb: float, matmul_n: int, repeats: int) -> dict:
    """The checked arguments of `overlap_rank_task`."""
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an int >= 1, got {repeats!r}")
    numel = int(buffer_mb * 2 ** 20) // 4
    if numel < 1:
        raise ValueError(f"buffer_mb must hold at least one float32, got {buffer_mb!r}")
    return {"numel": numel, "matmul_n": matmul_n, "repeats": repeats}


def overlap_result(world_size: int, payload: dict, res: dict) -> OverlapResult:
    """An OverlapResult from rank 0's `overlap_rank_task` figures."""
    return OverlapResult(world_size=world_size, buffer_bytes=payload["numel"] * 4, compute_s=res["compute"],
                         comm_s=res["comm"], sequential_s=res["sequential"], overlapped_s=res["overlapped"],
                         repeats=payload["repeats"])


def measure_overlap(world_size: int = 2, buffer_mb: float = 16.0, matmul_n: int = 192, repeats: int = 7,
                    timeout_s: float = 60.0) -> OverlapResult:
    """Time, alternately in one run: compute alone, an all-reduce of `buffer_mb` MiB alone, compute then a blocking
    all-reduce, and `all_reduce(async_op=True)` + compute + `work.wait()`. The compute (k matmuls of matmul_n^2) is
    sized to take about as long as the all-reduce. Medians over `repeats`, rank 0's clock."""
    payload = overlap_payload(buffer_mb, matmul_n, repeats)
    return overlap_result(world_size, payload, spawn_ranks(overlap_rank_task, world_size, payload, timeout_s)[0])


def _both_task(rank: int, world_size: int, payload: dict) -> dict:
    return {"tp": _tp_task(rank, world_size, payload["tp"]),
            "overlap": overlap_rank_task(rank, world_size, payload["overlap"])}


def run_parallel_demo(world_size: int = 2, batch: int = 2, seq_len: int = 16, seed: int = 0,
                      weights: str | None = None, buffer_mb: float = 16.0, matmul_n: int = 192, repeats: int = 7,
                      timeout_s: float = 90.0) -> tuple[TPResult, OverlapResult]:
    """`run_tensor_parallel` and `measure_overlap` in one start of the processes (starting them, importing torch,
    is most of the cost on a small machine); the same arguments."""
    start = time.perf_counter()
    payload = {"tp": _tp_payload(batch, seq_len, seed, weights), "overlap": overlap_payload(buffer_mb, matmul_n,
                                                                                             repeats)}
    outs = spawn_ranks(_both_task, world_size, payload, timeout_s)
    tp = _tp_result(world_size, payload["tp"], [o["tp"] for o in outs], time.perf_counter() - start)
    return tp, overlap_result(world_size, payload["overlap"], outs[0]["overlap"])
