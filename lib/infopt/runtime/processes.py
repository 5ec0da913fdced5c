"""Local worker processes joined in a torch.distributed (gloo) group: a free port, and `spawn_ranks` that runs one
module-level task per rank and brings the results home, with a timeout that kills hung ranks.

Shared by unit 08's tensor-parallel run (`infopt.llm.parallel_run`) and unit 10's collectives
(`infopt.kernels.collectives`); `free_port` also serves the Netron widget's local web server. torch is imported
only where processes start, so `free_port` costs nothing.
"""
from __future__ import annotations

import contextlib
import os
import queue as queue_mod
import socket
import sys
import time
from datetime import timedelta
from typing import Any, Callable, Iterator

__all__ = ["free_port", "spawn_ranks"]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on `host` that nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _rank_main(rank: int, world_size: int, port: int, timeout_s: float, results: Any, task: Callable,
               payload: dict) -> None:
    """Each spawned process: join the gloo group, run `task(rank, world_size, payload)`, send its result home."""
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    if sys.platform.startswith("linux"):
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")     # localhost only, whatever the hostname resolves to
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size,
                            timeout=timedelta(seconds=timeout_s))
    try:
        results.put((rank, task(rank, world_size, payload)))
        dist.barrier()
    finally:
        dist.destroy_process_group()


@contextlib.contextmanager
def _unreadable_main_hidden() -> Iterator[None]:
    """Spawned children re-run the parent's main script. When that is no file (`python - < script`, `<stdin>`), or
    `__main__.__file__` is not the script Python started (a Jupyter kernel's namespace, where Triton's interpreter
    copies its own module's `__file__` into the globals of a kernel defined in a cell), they would crash running
    it. The tasks live in importable modules, so hide such a path while starting them."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    started = sys.argv[0] if sys.argv and sys.argv[0] else ""
    not_the_script = not (started and os.path.isfile(started) and os.path.samefile(path, started)) if (
        path is not None and os.path.isfile(path)) else True
    hide = path is not None and getattr(main, "__spec__", None) is None and not_the_script
    if hide:
        del main.__file__
    try:
        yield
    finally:
        if hide:
            main.__file__ = path


def spawn_ranks(task: Callable[[int, int, dict], Any], world_size: int, payload: dict,
                timeout_s: float = 60.0) -> list[Any]:
    """Run `task(rank, world_size, payload)` (a module-level function) in `world_size` spawned processes joined in a
    gloo group on a free localhost port; return their results by rank. A hang past `timeout_s` kills the processes
    and raises TimeoutError; a failure in a process re-raises here with its traceback."""
    if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
        raise ValueError(f"world_size must be an int >= 1 (processes), got {world_size!r}")
    import torch.multiprocessing as mp

    results = mp.get_context("spawn").Queue()
    with _unreadable_main_hidden():
        ctx = mp.start_processes(_rank_main, args=(world_size, free_port(), timeout_s, results, task, payload),
                                 nprocs=world_size, join=False, start_method="spawn")
    deadline = time.monotonic() + timeout_s
    got: dict[int, Any] = {}
    try:
        while True:
            while True:                         # drain as we go, so no process blocks on a full pipe
                try:
                    rank, value = results.get_nowait()
                    got[rank] = value
                except queue_mod.Empty:
                    break
            if ctx.join(timeout=0.2):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{world_size} torch.distributed processes did not finish within {timeout_s:.0f} s "
                                   f"(ranks that reported: {sorted(got)}); they were killed. A rank waiting forever "
                                   "in a collective is the usual cause: every rank must call the same collectives.")
    finally:
        for p in ctx.processes:
            if p.is_alive():
                p.kill()
        for p in ctx.processes:
            p.join(5)
    while len(got) < world_size:
        try:
            rank, value = results.get(timeout=5)
            got[rank] = value
        except queue_mod.Empty:
            raise RuntimeError(f"ranks {sorted(set(range(world_size)) - set(got))} exited without a result") from None
    return [got[r] for r in range(world_size)]


