"""Collectives: ring all-reduce, reduce-scatter and all-gather, as schedules on paper and for real over gloo.

A schedule is a list of steps; a step is a list of `Transfer`s that happen at the same time (every transfer of a
step reads the buffers as they were before the step). Each rank's buffer is split in N chunks (np.array_split /
torch.tensor_split, so odd lengths are fine). The ring all-reduce is N - 1 reduce-scatter steps (in step s rank r
sends chunk (r - s) % N to rank (r + 1) % N, which adds it to its own), after which rank r holds the whole sum of
chunk (r + 1) % N, then N - 1 all-gather steps passing the summed chunks round the same ring. Each rank sends
2 (N - 1) chunks of 1/N of the buffer: 2 (N - 1) / N of it, whatever N, which is why NCCL calls
2 (N - 1) / N * bytes / time the "bus bandwidth" of an all-reduce. A tree (here recursive doubling) needs only
log2 N steps, but each step sends the whole buffer: better when latency dominates (small messages), worse in bytes.

`simulate_schedule` runs a schedule on numpy buffers (it grades exercise 7); `ring_allreduce` and friends run
the same ring on torch.distributed point-to-point ops inside a process group, and `run_collectives_demo` starts
local gloo processes to check them against `dist.all_reduce` and time both.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

__all__ = ["Transfer", "ring_allreduce_schedule", "ring_reduce_scatter_schedule", "ring_allgather_schedule",
           "tree_allreduce_schedule", "simulate_schedule", "allreduce_schedule_errors", "bytes_sent_per_rank",
           "bus_bandwidth", "ring_allreduce", "ring_reduce_scatter", "ring_all_gather", "run_collectives_demo",
           "overlap_demo"]

OPS = ("reduce", "copy")


@dataclass(frozen=True)
class Transfer:
    """Rank `src` sends its chunk `chunk` to rank `dst`; op "reduce": dst adds it to its own chunk `chunk`,
    "copy": dst overwrites its chunk `chunk` with it. `chunk` may be a tuple of chunks sent as one message."""

    src: int
    dst: int
    chunk: int | tuple[int, ...]
    op: str = "reduce"

    def chunks(self) -> tuple[int, ...]:
        """The chunk indices this transfer moves."""
        return tuple(self.chunk) if isinstance(self.chunk, (tuple, list)) else (self.chunk,)


Schedule = list[list[Transfer]]


def _check_ranks(n_ranks: Any) -> int:
    if isinstance(n_ranks, bool) or not isinstance(n_ranks, (int, np.integer)) or n_ranks < 1:
        raise ValueError(f"n_ranks must be an int >= 1 (the number of ranks), got {n_ranks!r}")
    return int(n_ranks)


def _ring_steps(n: int, first: int, count: int, shift: int, op: str) -> Schedule:
    """Steps g = first .. first + count - 1 of the ring: rank r sends chunk (r + shift - g) % n to (r + 1) % n."""
    return [[Transfer(r, (r + 1) % n, (r + shift - g) % n, op) for r in range(n)] for g in range(first, first + count)]


def ring_reduce_scatter_schedule(n_ranks: int, shift: int = -1) -> Schedule:
    """N - 1 steps after which rank r holds the whole sum of chunk (r + shift + 1) % N: with the default shift,
    chunk r (what `dist.reduce_scatter` gives rank r); the all-reduce's first half uses shift 0 (chunk r + 1)."""
    n = _check_ranks(n_ranks)
    return _ring_steps(n, 0, n - 1, shift, "reduce")


def ring_allgather_schedule(n_ranks: int, shift: int = 0) -> Schedule:
    """N - 1 copy steps that give every rank every chunk, when rank r starts with chunk (r + shift) % N complete
    (shift 0: rank r owns chunk r, as in `dist.all_gather`; the all-reduce's second half uses shift 1)."""
    n = _check_ranks(n_ranks)
    return _ring_steps(n, 0, n - 1, shift, "copy")


def ring_allreduce_schedule(n_ranks: int) -> Schedule:
    """Exercise 7's reference: 2 (N - 1) steps on the ring r -> (r + 1) % N. In step s < N - 1 rank r sends chunk
    (r - s) % N, which its right neighbour adds to its own (reduce-scatter: rank r ends with the sum of chunk
    (r + 1) % N); in step s >= N - 1 it sends chunk (r - s) % N again, now summed, and the neighbour copies it
    (all-gather). One rank: no steps."""
    n = _check_ranks(n_ranks)
    return _ring_steps(n, 0, n - 1, 0, "reduce") + _ring_steps(n, n - 1, n - 1, 0, "copy")


def tree_allreduce_schedule(n_ranks: int) -> Schedule:
    """Recursive doubling, the tree-like all-reduce: with p the largest power of two <= N, ranks p .. N-1 first
    fold their buffer into rank r - p; then in log2 p steps rank r swaps its whole buffer with rank r XOR 2^k and
    both add; finally ranks r - p copy the sum back to ranks p .. N-1. Few steps, but whole buffers each step."""
    n = _check_ranks(n_ranks)
    everything = tuple(range(n))
    p = 1 << (n.bit_length() - 1)
    steps: Schedule = []
    if n > p:
        steps.append([Transfer(r, r - p, everything, "reduce") for r in range(p, n)])
    k = 1
    while k < p:
        steps.append([Transfer(r, r ^ k, everything, "reduce") for r in range(p)])
        k *= 2
    if n > p:
        steps.append([Transfer(r - p, r, everything, "copy") for r in range(p, n)])
    return steps


def _validate(schedule: Any, n: int) -> list[list[Transfer]]:
    """The schedule as lists of Transfers, or a ValueError naming the first malformed step or transfer."""
    if not isinstance(schedule, (list, tuple)):
        raise ValueError(f"a schedule is a list of steps (each a list of Transfer), got {type(schedule).__name__}")
    for s, step in enumerate(schedule):
        if isinstance(step, Transfer) or not isinstance(step, (list, tuple)):
            raise ValueError(f"step {s} is a {type(step).__name__}, not a list of Transfer: a schedule is a list of "
                             "steps and each step a list of the transfers that happen at the same time (wrap a "
                             "single transfer in a list)")
        senders: dict[int, int] = {}
        receivers: dict[int, int] = {}
        for i, t in enumerate(step):
            where = f"step {s}, transfer {i} ({t!r})"
            if not isinstance(t, Transfer):
                raise ValueError(f"{where} is a {type(t).__name__}, not a Transfer(src, dst, chunk, op)")
            for role, rank in (("src", t.src), ("dst", t.dst)):
                if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or not 0 <= rank < n:
                    raise ValueError(f"{where}: {role} = {rank!r} is not a rank; with {n} ranks they are 0..{n - 1}")
            if t.src == t.dst:
                raise ValueError(f"{where}: rank {t.src} sends to itself; a transfer goes to another rank")
            chunks = t.chunks()
            if not chunks:
                raise ValueError(f"{where}: sends no chunk")
            for c in chunks:
                if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or not 0 <= c < n:
                    raise ValueError(f"{where}: chunk {c!r} is out of range; the buffer is split in {n} chunks, "
                                     f"0..{n - 1}")
            if t.op not in OPS:
                raise ValueError(f"{where}: unknown op {t.op!r}; use 'reduce' (the receiver adds) or 'copy' (the "
                                 "receiver overwrites)")
            if t.src in senders:
                raise ValueError(f"step {s}: rank {t.src} sends twice (transfers {senders[t.src]} and {i}); in one "
                                 "step each rank sends at most one message, so spread its sends over steps")
            if t.dst in receivers:
                raise ValueError(f"step {s}: rank {t.dst} receives twice (transfers {receivers[t.dst]} and {i}); in "
                                 "one step each rank receives at most one message")
            senders[t.src], receivers[t.dst] = i, i
    return [list(step) for step in schedule]


def simulate_schedule(schedule: Schedule, data: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run `schedule` on one buffer per rank (data[r], all the same shape; each split in len(data) chunks with
    np.array_split of the flattened buffer) and return the buffers after it; the inputs are not changed.
    A malformed schedule is a ValueError saying which step and transfer and what is wrong."""
    if not isinstance(data, (list, tuple)) or not data:
        raise ValueError("data must be a non-empty list with one numpy array per rank")
    bufs = [np.array(d, dtype=np.result_type(np.asarray(d).dtype, np.float64)).reshape(-1) for d in data]
    shape = np.shape(data[0])
    for r, d in enumerate(data):
        if np.shape(d) != shape:
            raise ValueError(f"every rank's buffer must have the same shape: rank 0 has {shape}, rank {r} has "
                             f"{np.shape(d)}")
    n = len(bufs)
    steps = _validate(schedule, n)
    bounds = np.cumsum([0] + [len(c) for c in np.array_split(np.arange(bufs[0].size), n)])
    for step in steps:
        before = [b.copy() for b in bufs]      # a step's transfers all read the state before it
        for t in step:
            for c in t.chunks():
                lo, hi = bounds[c], bounds[c + 1]
                if t.op == "reduce":
                    bufs[t.dst][lo:hi] += before[t.src][lo:hi]
                else:
                    bufs[t.dst][lo:hi] = before[t.src][lo:hi]
    return [b.reshape(shape) for b in bufs]


def allreduce_schedule_errors(schedule: Schedule, n_ranks: int) -> list[str]:
    """What is wrong with `schedule` as an all-reduce over `n_ranks` ranks, in words (empty when every rank ends
    with every rank's contribution exactly once in every chunk). Malformed schedules raise ValueError."""
    n = _check_ranks(n_ranks)
    # rank j's buffer holds 1 in every chunk, the others 0: after the schedule, out[r][c] counts how many times
    # chunk c of rank r holds rank j's contribution
    counts = np.stack([np.stack(simulate_schedule(schedule, [np.full(n, float(r == j)) for r in range(n)]))
                       for j in range(n)])                       # [contributor j, rank r, chunk c]
    errors = []
    for r in range(n):
        for c in range(n):
            got = counts[:, r, c]
            if np.all(got == 1):
                continue
            missing = [j for j in range(n) if got[j] == 0]
            extra = [j for j in range(n) if got[j] > 1]
            what = []
            if missing:
                what.append(f"is missing the contribution of rank(s) {missing}")
            if extra:
                what.append(f"counts rank(s) {extra} more than once ({[int(got[j]) for j in extra]} times)")
            errors.append(f"after your schedule, rank {r}'s chunk {c} " + " and ".join(what))
    return errors


def bytes_sent_per_rank(schedule: Schedule, nbytes: int, n_ranks: int | None = None) -> list[int]:
    """Bytes each rank sends over the whole schedule when each buffer has `nbytes` bytes split in `n_ranks` chunks
    (np.array_split sizes; default: the ranks the schedule names). The ring: 2 (N - 1) / N * nbytes each."""
    if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)) or nbytes < 0:
        raise ValueError(f"nbytes must be an int >= 0, got {nbytes!r}")
    if n_ranks is None:
        n_ranks = 1 + max((max(t.src, t.dst) for step in schedule if isinstance(step, (list, tuple))
                           for t in step if isinstance(t, Transfer)), default=0)
    n = _check_ranks(n_ranks)
    steps = _validate(schedule, n)
    sizes = [len(c) for c in np.array_split(np.arange(int(nbytes)), n)]
    sent = [0] * n
    for step in steps:
        for t in step:
            sent[t.src] += sum(sizes[c] for c in t.chunks())
    return sent


def bus_bandwidth(nbytes: int, seconds: float, world_size: int) -> float:
    """NCCL's bus bandwidth of an all-reduce, bytes/s: 2 (N - 1) / N * nbytes / seconds (what each link carries)."""
    if seconds <= 0:
        raise ValueError(f"seconds must be > 0, got {seconds!r}")
    return 2 * (world_size - 1) / world_size * nbytes / seconds


# --- for real: torch.distributed point-to-point inside a process group ---------------------------------------------
def _group_ranks(group: Any) -> tuple[int, int, list[int]]:
    """(this rank in the group, group size, global rank of each group rank)."""
    import torch.distributed as dist

    if not dist.is_initialized():
        raise RuntimeError("no torch.distributed process group: call this inside one (run_collectives_demo starts "
                           "local gloo processes and calls it there)")
    n, r = dist.get_world_size(group), dist.get_rank(group)
    peers = list(range(n)) if group is None else [dist.get_global_rank(group, i) for i in range(n)]
    return r, n, peers


def _check_tensor(tensor: Any, name: str) -> None:
    import torch

    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
    if not tensor.is_contiguous():
        raise ValueError(f"{name} must be contiguous (the ring works on its flat view in place): pass "
                         f"{name}.contiguous()")
    if tensor.device.type != "cpu":
        raise ValueError(f"{name} is on {tensor.device}; gloo's point-to-point ops here run on CPU tensors")


_SCRATCH: dict[Any, Any] = {}


def _scratch(numel: int, dtype: Any) -> Any:
    """A flat working buffer of at least `numel` elements, kept between calls (fresh memory costs page faults)."""
    import torch

    buf = _SCRATCH.get(dtype)
    if buf is None or buf.numel() < numel:
        buf = _SCRATCH[dtype] = torch.empty(max(numel, 1), dtype=dtype)
    return buf


def _run_ring(flat: Any, r: int, n: int, peers: list[int], shift: int, n_reduce: int, n_copy: int,
              pieces: int) -> int:
    """Steps g = 0 .. n_reduce + n_copy - 1 of the ring on `flat` (this rank r): send chunk (r + shift - g) % n to
    the right, receive chunk (r + shift - 1 - g) % n from the left and add it (first n_reduce steps) or copy it.

    Pipelined: every chunk is cut in `pieces` pieces, all receives are posted at the start (reduce steps into
    preallocated scratch, copy steps straight into place), and a piece goes on to the next step as soon as it has
    arrived (and been added), so sending, receiving and adding overlap. Copying straight into place is safe
    because what arrives for a chunk was computed from what this rank sent of it (the ring needs this rank's
    contribution first). Empty pieces (a buffer shorter than n * pieces) are skipped on both sides alike.
    Returns the bytes sent."""
    import torch.distributed as dist

    right, left = peers[(r + 1) % n], peers[(r - 1) % n]
    parts = [chunk.tensor_split(pieces) for chunk in flat.tensor_split(n)]
    steps = n_reduce + n_copy
    width = -(-flat.numel() // n)
    room = _scratch(n_reduce * width, flat.dtype)
    recvs, scratch = [], []
    for g in range(steps):
        c = (r + shift - 1 - g) % n
        if g < n_reduce:
            base = room[g * width: g * width + sum(x.numel() for x in parts[c])]
            bufs = list(base.split([x.numel() for x in parts[c]]))
        else:
            bufs = parts[c]
        scratch.append(bufs)
        recvs.append([dist.irecv(b, left, tag=g * pieces + p) if b.numel() else None for p, b in enumerate(bufs)])
    sends, sent = [], 0
    first = (r + shift) % n
    for p, x in enumerate(parts[first]):
        if x.numel():
            sends.append(dist.isend(x, right, tag=p))
            sent += x.numel() * x.element_size()
    for g in range(steps):
        c = (r + shift - 1 - g) % n
        for p in range(pieces):
            if recvs[g][p] is None:
                continue
            recvs[g][p].wait()
            if g < n_reduce:
                parts[c][p].add_(scratch[g][p])
            if g + 1 < steps:              # what arrived at step g is what this rank sends at step g + 1
                x = parts[c][p]
                sends.append(dist.isend(x, right, tag=(g + 1) * pieces + p))
                sent += x.numel() * x.element_size()
    for w in sends:
        w.wait()
    return sent


def _check_pieces(pieces: Any) -> int:
    if isinstance(pieces, bool) or not isinstance(pieces, int) or pieces < 1:
        raise ValueError(f"pieces must be an int >= 1 (how many pieces each chunk is pipelined in), got {pieces!r}")
    return pieces


def ring_allreduce(tensor: Any, group: Any = None, pieces: int = 4) -> Any:
    """Sum `tensor` over the ranks of `group` in place with the ring of `ring_allreduce_schedule`, from
    isend/irecv (pipelined in `pieces` pieces per chunk); returns the tensor. Call it on every rank."""
    _check_tensor(tensor, "tensor")
    r, n, peers = _group_ranks(group)
    if n > 1:
        _run_ring(tensor.view(-1), r, n, peers, 0, n - 1, n - 1, _check_pieces(pieces))
    return tensor


def ring_reduce_scatter(tensor: Any, group: Any = None, pieces: int = 4) -> Any:
    """The sum over the ranks of chunk r of `tensor` (tensor_split in N chunks), returned on rank r as a view into
    `tensor`, which serves as the working buffer (its other chunks hold partial sums afterwards)."""
    _check_tensor(tensor, "tensor")
    r, n, peers = _group_ranks(group)
    flat = tensor.view(-1)
    if n > 1:
        _run_ring(flat, r, n, peers, -1, n - 1, 0, _check_pieces(pieces))
    return flat.tensor_split(n)[r]


def ring_all_gather(chunk: Any, group: Any = None, pieces: int = 4) -> Any:
    """Every rank's `chunk` (all the same shape), concatenated in rank order into a new flat tensor of
    N * chunk.numel() elements, by the ring of `ring_allgather_schedule`."""
    import torch

    _check_tensor(chunk, "chunk")
    r, n, peers = _group_ranks(group)
    out = torch.empty(n * chunk.numel(), dtype=chunk.dtype)
    out.view(n, -1)[r].copy_(chunk.view(-1))
    if n > 1:
        _run_ring(out, r, n, peers, 0, 0, n - 1, _check_pieces(pieces))
    return out


# --- the demos: local gloo processes ---------------------------------------------------------------------------------
def _collectives_task(rank: int, world_size: int, payload: dict) -> dict:
    """On each rank: check the ring collectives against gloo's, then time ring vs dist.all_reduce, interleaved."""
    import torch
    import torch.distributed as dist

    numel, pieces = payload["numel"], payload["pieces"]
    gen = torch.Generator().manual_seed(1234 + rank)
    x = torch.randn(numel, generator=gen)
    want = x.clone()
    dist.all_reduce(want)
    n = world_size
    got = x.clone()
    sent = _run_ring(got, rank, n, list(range(n)), 0, n - 1, n - 1, pieces)      # ring_allreduce, bytes counted
    rs = ring_reduce_scatter(x.clone(), pieces=pieces)
    mine = x[: numel // n].contiguous()
    gathered = [torch.empty_like(mine) for _ in range(n)]
    dist.all_gather(gathered, mine)
    ag = ring_all_gather(mine, pieces=pieces)
    errs = {"ring_bytes_sent": sent, "allreduce_max_abs_err": float((got - want).abs().max()),
            "reduce_scatter_max_abs_err": float((rs - want.tensor_split(n)[rank]).abs().max()),
            "all_gather_max_abs_err": float((ag - torch.cat(gathered)).abs().max())}
    ints = torch.randint(-1000, 1000, (1001,), generator=gen).float()   # integers: exact in any order
    want_i = ints.clone()
    dist.all_reduce(want_i)
    errs["allreduce_exact_on_integers"] = bool(torch.equal(ring_allreduce(ints.clone(), pieces=pieces), want_i))
    tiny = torch.arange(3.0) + rank        # shorter than N * pieces: some pieces are empty
    want_t = tiny.clone()
    dist.all_reduce(want_t)
    errs["allreduce_exact_tiny"] = bool(torch.equal(ring_allreduce(tiny.clone(), pieces=pieces), want_t))

    buf = torch.randn(numel, generator=gen)
    scratch = buf.clone()

    def timed(fn: Any) -> float:
        scratch.copy_(buf)
        dist.barrier()
        t0 = time.perf_counter()
        fn(scratch)
        t = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)      # the collective ends when its slowest rank does
        return float(t)

    ways = {"gloo": lambda t: dist.all_reduce(t), "ring": lambda t: ring_allreduce(t, pieces=pieces)}
    for fn in ways.values():                          # warm up connections and allocations
        timed(fn)
    times: dict[str, list[float]] = {k: [] for k in ways}
    for i in range(payload["repeats"]):
        order = list(ways) if i % 2 == 0 else list(ways)[::-1]
        for k in order:
            times[k].append(timed(ways[k]))
    out = {**errs, "gloo_s": statistics.median(times["gloo"]), "ring_s": statistics.median(times["ring"]),
           "gloo_times": times["gloo"], "ring_times": times["ring"]}
    if payload.get("overlap") is not None:
        from ..llm.parallel_run import overlap_rank_task

        out["overlap"] = overlap_rank_task(rank, world_size, payload["overlap"])
    return out


def run_collectives_demo(world_size: int = 2, nbytes: int = 16 << 20, repeats: int = 5, pieces: int = 4,
                         overlap: bool = False, timeout_s: float = 60.0) -> dict:
    """Start `world_size` local gloo processes; check ring all-reduce / reduce-scatter / all-gather against gloo's
    (max abs errors; exact on integer-valued data) and time the ring against `dist.all_reduce` on a float32 buffer
    of `nbytes` bytes, alternating, medians of `repeats` (the slowest rank's time). Bus bandwidths in GB/s;
    "ring_over_gloo" is the ratio of the medians, "ring_over_gloo_q25" that of each way's first quartile.
    overlap=True also runs `overlap_demo`'s measurement in the same processes (key "overlap")."""
    from ..llm.parallel_run import overlap_payload, overlap_result
    from ..runtime.processes import spawn_ranks

    if isinstance(world_size, bool) or not isinstance(world_size, int) or not 2 <= world_size <= 8:
        raise ValueError(f"world_size must be an int in 2..8 (local processes), got {world_size!r}")
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 4 * world_size:
        raise ValueError(f"nbytes must be an int >= 4 * world_size (a float32 per rank), got {nbytes!r}")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an int >= 1, got {repeats!r}")
    _check_pieces(pieces)
    numel = nbytes // 4
    start = time.perf_counter()
    ov = overlap_payload(nbytes / 2 ** 20, 192, repeats) if overlap else None
    res = spawn_ranks(_collectives_task, world_size, {"numel": numel, "pieces": pieces, "repeats": repeats,
                                                      "overlap": ov}, timeout_s)[0]
    size = numel * 4
    out = {"world_size": world_size, "nbytes": size, "repeats": repeats, "pieces": pieces,
           **{k: v for k, v in res.items() if not k.endswith("_times")},
           "gloo_busbw_GBps": bus_bandwidth(size, res["gloo_s"], world_size) / 1e9,
           "ring_busbw_GBps": bus_bandwidth(size, res["ring_s"], world_size) / 1e9,
           # rank 0's chunks, in float32 elements (the split is by element): 2 (N - 1) / N of the buffer
           "formula_bytes_sent_per_rank": 4 * bytes_sent_per_rank(ring_allreduce_schedule(world_size), numel)[0],
           "seconds": time.perf_counter() - start}
    out["ring_over_gloo"] = out["ring_busbw_GBps"] / out["gloo_busbw_GBps"]
    # a cross-check on a shared machine, where medians partly measure the neighbours: each way's first quartile
    out["ring_over_gloo_q25"] = _quartile(res["gloo_times"]) / _quartile(res["ring_times"])
    if overlap:
        out["overlap"] = _overlap_dict(overlap_result(world_size, ov, res["overlap"]))
    return out


def _quartile(times: list[float]) -> float:
    """The first quartile (the faster runs, less disturbed by other tenants; the median when there are few)."""
    return float(np.quantile(times, 0.25)) if len(times) >= 4 else statistics.median(times)


def _overlap_dict(res: Any) -> dict:
    return {"world_size": res.world_size, "nbytes": res.buffer_bytes, "repeats": res.repeats,
            "compute_s": res.compute_s, "comm_s": res.comm_s, "sequential_s": res.sequential_s,
            "overlapped_s": res.overlapped_s, "speedup": res.speedup, "ideal_speedup": res.ideal_speedup,
            "report": res.report()}


def overlap_demo(world_size: int = 2, nbytes: int = 16 << 20, matmul_n: int = 192, repeats: int = 7,
                 timeout_s: float = 60.0) -> dict:
    """Compute (k matmuls, sized to take about as long as the all-reduce) overlapped with
    `dist.all_reduce(async_op=True)` vs compute then a blocking all-reduce, measured alternately in local gloo
    processes: unit 08's `infopt.llm.parallel_run.measure_overlap`, as a dict with `speedup` (sequential /
    overlapped) and `ideal_speedup` ((compute + comm) / max(compute, comm))."""
    from ..llm.parallel_run import measure_overlap

    return _overlap_dict(measure_overlap(world_size, buffer_mb=nbytes / 2 ** 20, matmul_n=matmul_n, repeats=repeats,
                                         timeout_s=timeout_s))
