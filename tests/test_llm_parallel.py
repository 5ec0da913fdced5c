"""infopt.llm.parallel: the communication formulas (checked by a simulated ring and by hand), the calculator and its
figure; the tiny model's tensor-parallel split checked in-process (threads) and run for real across 2 processes
(torch.distributed, gloo) with the bytes counted; compute/all-reduce overlap measured."""
import threading
import time

import pytest

from infopt.llm import parallel
from infopt.llm.memory import MODELS
from infopt.llm.parallel import (CLUSTERS, Cluster, all_to_all_bytes, comm_table, dp_bytes, ep_bytes, pp_bytes,
                                 ring_all_reduce_bytes, tp_bytes)


def simulate_ring_all_reduce(buffers: list[list[float]]) -> tuple[list[list[float]], list[int]]:
    """Ring all-reduce over n simulated ranks (lists of floats): returns the results and the elements each sent."""
    n, size = len(buffers), len(buffers[0])
    bounds = [size * i // n for i in range(n + 1)]
    data = [list(b) for b in buffers]
    sent = [0] * n
    for phase in ("reduce-scatter", "all-gather"):
        for step in range(n - 1):
            msgs = []
            for r in range(n):
                c = (r - step) % n if phase == "reduce-scatter" else (r - step + 1) % n
                msgs.append((r, (r + 1) % n, c, data[r][bounds[c]:bounds[c + 1]]))
                sent[r] += bounds[c + 1] - bounds[c]
            for _, dst, c, chunk in msgs:
                for j, x in enumerate(chunk):
                    if phase == "reduce-scatter":
                        data[dst][bounds[c] + j] += x
                    else:
                        data[dst][bounds[c] + j] = x
    return data, sent


@pytest.mark.parametrize("n", [2, 3, 4, 8])
def test_ring_formula_matches_a_simulated_ring(n):
    size = 24
    buffers = [[float(r * 100 + i) for i in range(size)] for r in range(n)]
    out, sent = simulate_ring_all_reduce(buffers)
    total = [sum(b[i] for b in buffers) for i in range(size)]
    assert all(o == total for o in out)
    assert all(s * 4 == ring_all_reduce_bytes(size * 4, n) for s in sent)   # float32 elements
    assert ring_all_reduce_bytes(100, 1) == 0 and ring_all_reduce_bytes(100, 2) == 100


def test_import_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, infopt.llm.parallel as p; p.comm_table('DeepSeek-V3', '1 node, 8 GPUs: TP 8'); " \
           "print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_formulas_by_hand():
    llama8, ds = MODELS["Llama 3 8B"], MODELS["DeepSeek-V3"]
    # TP: 32 layers * 2 all-reduces * ring(1 token * 4096 * 2 bytes, 2) = 64 * 8192
    assert tp_bytes(llama8, 2, 1, "fp16") == 64 * 8192
    assert tp_bytes(llama8, 2, 1, "fp16", training=True) == 2 * 64 * 8192
    assert tp_bytes(llama8, 8, 10, "bf16", pp=2) == 16 * 2 * (2 * 7 / 8) * 10 * 4096 * 2
    # PP: one stage boundary carries tokens * hidden * bytes
    assert pp_bytes(llama8, 1, 4096) == 0 and pp_bytes(llama8, 4, 4096, "bf16") == 4096 * 4096 * 2
    # DP: gradients, training only
    assert dp_bytes(llama8, 4, "bf16", training=False) == 0
    assert dp_bytes(llama8, 4, "bf16", tp=2) == pytest.approx(1.5 * 8.03e9 / 2 * 2)
    # EP: 58 MoE layers * (dispatch + combine) * 1 token * 8 experts * 7168 * 2 bytes * 7/8 off-rank
    assert ep_bytes(ds, 8, 1, "bf16") == pytest.approx(58 * 2 * 8 * 7168 * 2 * 7 / 8)
    assert ep_bytes(llama8, 8, 4096) == 0 and all_to_all_bytes(80, 4) == 60


@pytest.mark.parametrize("call, match", [
    (lambda: ring_all_reduce_bytes(10, 0), "n"), (lambda: tp_bytes(MODELS["Qwen3 8B"], 2, -1), "tokens"),
    (lambda: ep_bytes(MODELS["DeepSeek-V3"], 3, 10), "divide"), (lambda: tp_bytes(MODELS["Qwen3 8B"], 2, 1, "fp6"),
                                                                 "dtype"),
    (lambda: Cluster(name="x", tp=0), "tp"), (lambda: Cluster(name="x", tp=2, ep=4), "ep"),
    (lambda: comm_table("Llama 3 8B", "no such cluster"), "CLUSTERS"),
])
def test_bad_input_is_a_clear_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_comm_table_applies_the_formulas_and_the_links():
    c = CLUSTERS["4 nodes, 32 GPUs: TP 8 x PP 4, EP 32"]
    rows = {r["form"]: r for r in comm_table("DeepSeek-V3", c, tokens=2048, dtype="bf16")}
    assert set(rows) == {"data", "tensor", "pipeline", "expert"}
    ds = MODELS["DeepSeek-V3"]
    assert rows["tensor"]["bytes_per_rank"] == tp_bytes(ds, 8, 2048, "bf16", pp=4)
    assert rows["expert"]["bytes_per_rank"] == ep_bytes(ds, 32, 2048, "bf16", pp=4)
    assert rows["pipeline"]["bytes_per_rank"] == 2048 * 7168 * 2
    assert rows["data"]["bytes_per_rank"] == 0                        # inference
    assert rows["tensor"]["link"] == "intra-node" and rows["expert"]["link"] == "inter-node"
    for r in rows.values():
        assert r["seconds"] == pytest.approx(r["bytes_per_rank"] / (r["link_gbs"] * 1e9))
    train = {r["form"]: r for r in comm_table("Llama 3 70B", "4 nodes, 32 GPUs: TP 8 x DP 4", training=True)}
    assert train["data"]["bytes_per_rank"] == dp_bytes(MODELS["Llama 3 70B"], 4, "bf16", tp=8)
    assert train["data"]["link"] == "inter-node" and train["expert"]["bytes_per_rank"] == 0
    assert train["pipeline"]["link"] == "none" and train["pipeline"]["bytes_per_rank"] == 0


def test_comm_figure_has_a_line_per_form():
    fig = parallel.comm_figure("Qwen3 235B-A22B", tokens=1024, training=True)
    assert [t.name for t in fig.data] == ["data (gradients)", "tensor", "pipeline", "expert"]
    tensor = fig.data[1]
    assert tensor.y[0] is None and tensor.y[1] == tp_bytes(MODELS["Qwen3 235B-A22B"], 2, 1024, training=True)
    assert len(parallel.comm_figure("Llama 3 8B").data) == 3           # dense: no expert line


# --- the split itself, in one process: ranks as threads, all-reduce as a barrier and a sum --------------------------
torch = pytest.importorskip("torch")


class ThreadAllReduce:
    """An in-process all-reduce for n threads: each hands its tensor in, all get the sum back in place."""

    def __init__(self, n: int):
        self.n, self.barrier, self.lock, self.parts, self.calls = n, threading.Barrier(n), threading.Lock(), {}, 0

    def __call__(self, rank: int, t: "torch.Tensor") -> None:
        with self.lock:
            self.parts[rank] = t.clone()
        self.barrier.wait()
        total = sum(self.parts[r] for r in range(self.n))
        self.barrier.wait()
        t.copy_(total)
        if rank == 0:
            self.calls += 1


@pytest.mark.parametrize("n", [1, 2])
def test_split_layers_summed_equal_the_model(n):
    from infopt.llm.model import TARGET_CONFIG, TinyLlama
    from infopt.llm.parallel_run import tp_hidden

    torch.set_num_threads(1)
    model = TinyLlama(TARGET_CONFIG, seed=3).eval()
    tokens = torch.randint(0, 256, (2, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ref = model.hidden(tokens)
    reducer, outs = ThreadAllReduce(n), [None] * n

    def rank_main(r):
        with torch.no_grad():
            outs[r] = tp_hidden(model, tokens, r, n, lambda t: reducer(r, t))

    threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(30)
    assert reducer.calls == 2 * TARGET_CONFIG.n_layers
    for out in outs:
        assert float((out - ref).abs().max()) < 1e-5


def test_shard_layer_splits_heads_and_mlp():
    from infopt.llm.model import TARGET_CONFIG, TinyLlama
    from infopt.llm.parallel_run import shard_layer

    cfg, state = TARGET_CONFIG, TinyLlama(TARGET_CONFIG).state_dict()
    w0 = shard_layer(state, 1, 0, 2, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim)
    w1 = shard_layer(state, 1, 1, 2, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim)
    assert w0["q"].shape == (cfg.n_heads // 2 * cfg.head_dim, cfg.dim)
    assert w0["k"].shape == (cfg.n_kv_heads // 2 * cfg.head_dim, cfg.dim)
    assert w0["gate"].shape == (cfg.ffn_dim // 2, cfg.dim) and w0["down"].shape == (cfg.dim, cfg.ffn_dim // 2)
    assert torch.equal(torch.cat([w0["up"], w1["up"]]), state["layers.1.mlp.up_proj.weight"])
    assert torch.equal(torch.cat([w0["o"], w1["o"]], dim=1), state["layers.1.self_attn.o_proj.weight"])
    with pytest.raises(ValueError, match="whole heads"):
        shard_layer(state, 0, 0, 4, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim)


# --- for real: 2 processes, torch.distributed, gloo -----------------------------------------------------------------
def hang_forever(rank: int, world_size: int, payload: dict) -> None:
    """A task that never returns (spawned by the timeout test)."""
    time.sleep(3600)


@pytest.fixture(scope="module")
def demo():
    from infopt.llm.parallel_run import run_parallel_demo

    return run_parallel_demo(2, batch=2, seq_len=16, buffer_mb=8, repeats=5, timeout_s=120)


@pytest.mark.xdist_group("llm_dist")
def test_tensor_parallel_across_two_processes_equals_one(demo):
    tp, _ = demo
    print(tp.report())
    assert tp.world_size == 2 and tp.tokens == 32
    assert tp.max_abs_err < 1e-5 and tp.max_abs_err_ring < 1e-5
    assert tp.max_rank_disagreement < 1e-6                     # after the all-reduce every rank holds the same sums


@pytest.mark.xdist_group("llm_dist")
def test_bytes_sent_equal_the_formula(demo):
    from infopt.llm.memory import TINY

    tp, _ = demo
    assert tp.all_reduces == 2 * TINY["target"].n_layers       # ONE all-reduce after attention, ONE after the MLP
    assert tp.all_reduced_bytes == tp.formula_buffer_bytes == 4 * 2 * 32 * 128 * 4
    assert tp.ring_bytes_sent == tp.formula_ring_bytes == tp_bytes(TINY["target"], 2, 32, "fp32")


@pytest.mark.xdist_group("llm_dist")
def test_overlap_is_measured_side_by_side(demo):
    _, ov = demo
    print(ov.report())
    assert ov.buffer_bytes == 8 * 2 ** 20 and ov.repeats == 5
    for t in (ov.compute_s, ov.comm_s, ov.sequential_s, ov.overlapped_s):
        assert 0 < t < 60
    assert 1.0 <= ov.ideal_speedup <= 2.0
    assert ov.speedup == pytest.approx(ov.sequential_s / ov.overlapped_s)


@pytest.mark.xdist_group("llm_dist")
def test_a_hang_fails_clearly_and_the_processes_die():
    from infopt.llm.parallel_run import spawn_ranks

    t0 = time.monotonic()
    with pytest.raises(TimeoutError, match="did not finish within 3 s"):
        spawn_ranks(hang_forever, 2, {}, timeout_s=3)
    assert time.monotonic() - t0 < 30
    with pytest.raises(ValueError, match="world_size"):
        spawn_ranks(hang_forever, 0, {})
