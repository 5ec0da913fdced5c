"""Run one assembled notebook in its sandbox, cell by cell, recording each cell's result as soon as it finishes.

The grader drives the kernel with jupyter_client over IPC sockets (the kernel has no network). Each cell's
result is appended to a JSON-lines log before the next cell starts, so a kernel that dies at cell k keeps the
credit of the cells before it. A cell passes or fails on its execute reply alone; stderr output never fails it.
Before each test cell a few canaries (assertions that must fail) check that the kernel still reports failures.
"""
from __future__ import annotations

import dataclasses
import json
import secrets
import subprocess
import sys
import time
from pathlib import Path
from queue import Empty

from .sandbox import Limits, Sandbox

TEXT_CAP = 4000  # characters of each cell's output kept for feedback
_POLL_S = 0.1


@dataclasses.dataclass
class CellResult:
    """What happened to one code cell: status ok|error|timeout|died|not_run, the error, output excerpt, seconds."""

    index: int
    kind: str
    grade_id: str | None
    status: str
    ename: str = ""
    evalue: str = ""
    traceback: str = ""
    output: str = ""
    output_bytes: int = 0
    seconds: float = 0.0
    canary: str = ""  # non-empty: the canary before this cell passed when it had to fail (tampered kernel)


def _canaries() -> list[tuple[str, str]]:
    """(code, expected exception name) pairs; each must fail in an honest kernel with its nonce in the message."""
    nonce = secrets.randbelow(10**9) + 10
    return [
        (f"assert {nonce} == {nonce + 1}, 'canary-{nonce}'", "AssertionError"),
        (f"__import__('infopt.grading', fromlist=['check_equal']).check_equal({nonce}, {nonce + 1}, "
         f"name='canary-{nonce}')", "GradingError"),
        (f"__import__('numpy').testing.assert_allclose({nonce}.0, -{nonce}.0, err_msg='canary-{nonce}')",
         "AssertionError"),
    ]


def _kernel_manager(sandbox: Sandbox):
    """A jupyter_client KernelManager whose kernel command runs inside `sandbox`, talking over IPC sockets."""
    from jupyter_client.manager import KernelManager

    class SandboxedKernelManager(KernelManager):
        def format_kernel_cmd(self, extra_arguments=None):  # noqa: D102 (jupyter_client hook)
            sandbox.prepare_run_files()
            return sandbox.wrap([sys.executable, "-m", "ipykernel_launcher", "-f", self.connection_file])

    km = SandboxedKernelManager(kernel_name="python3", transport="ipc", ip=str(sandbox.run_dir / "kernel"),
                                connection_file=str(sandbox.run_dir / "kernel.json"))
    km.shutdown_wait_time = 1.0
    return km


class _Runner:
    """Executes cells on one kernel, enforcing the per-cell and per-notebook wall clock."""

    def __init__(self, km, kc, sandbox: Sandbox, deadline: float) -> None:
        self.km, self.kc, self.sandbox, self.deadline = km, kc, sandbox, deadline

    def execute(self, code: str, timeout: float, store_history: bool = True) -> dict:
        """Run code; return {'status', 'ename', 'evalue', 'traceback', 'output', 'output_bytes', 'seconds'}."""
        start = time.monotonic()
        msg_id = self.kc.execute(code, store_history=store_history, allow_stdin=False, stop_on_error=False)
        result = {"status": "", "ename": "", "evalue": "", "traceback": "", "output": "", "output_bytes": 0}
        pieces: list[str] = []
        kept = 0
        reply = None
        idle = False
        limit = start + timeout
        last_alive_check = start
        while reply is None or not idle:
            now = time.monotonic()
            if now > limit:
                result["status"] = "timeout"
                break
            if reply is not None and now > reply_at + 2.0:  # reply came but the idle status got lost
                break
            got = False
            try:
                msg = self.kc.get_iopub_msg(timeout=_POLL_S)
                got = True
                if msg["parent_header"].get("msg_id") == msg_id:
                    kind, content = msg["msg_type"], msg["content"]
                    text = ""
                    if kind == "stream":
                        text = content.get("text", "")
                    elif kind in ("execute_result", "display_data"):
                        text = str(content.get("data", {}).get("text/plain", ""))
                    elif kind == "error":
                        result["ename"], result["evalue"] = content.get("ename", ""), content.get("evalue", "")
                        result["traceback"] = _strip_ansi("\n".join(content.get("traceback", [])))[-TEXT_CAP:]
                    elif kind == "status" and content.get("execution_state") == "idle":
                        idle = True
                    if text:
                        result["output_bytes"] += len(text)
                        if kept < TEXT_CAP:
                            pieces.append(text[: TEXT_CAP - kept])
                            kept += len(pieces[-1])
            except Empty:
                pass
            if reply is None:
                try:
                    msg = self.kc.get_shell_msg(timeout=0 if got else 0.01)
                    if msg["parent_header"].get("msg_id") == msg_id:
                        reply = msg["content"]
                        reply_at = time.monotonic()
                except Empty:
                    pass
            if now - last_alive_check > 0.5:
                last_alive_check = now
                if not self.km.is_alive():
                    result["status"] = "died"
                    break
        result["output"] = _strip_ansi("".join(pieces))
        if not result["status"]:
            status = (reply or {}).get("status", "error")
            result["status"] = "ok" if status == "ok" else "error"
            if status != "ok" and not result["ename"]:
                result["ename"] = (reply or {}).get("ename", "Aborted" if status == "aborted" else "Error")
                result["evalue"] = (reply or {}).get("evalue", "")
        result["seconds"] = time.monotonic() - start
        return result


def _strip_ansi(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)


def _label(index: int, cell: dict) -> str:
    """How reports name a cell: its 1-based position in the graded notebook and its grade_id when it has one."""
    return f"cell {index + 1}" + (f" ({cell['grade_id']})" if cell.get("grade_id") else "")


def _death_reason(sandbox: Sandbox, km) -> str:
    """Why the kernel died, as precisely as the sandbox can tell (memory cap, CPU cap, exit code)."""
    if sandbox.out_of_memory():
        return f"out of memory (limit {sandbox.limits.memory_mb} MB)"
    code = None
    try:
        process = km.provisioner.process if km.provisioner else None
        code = process.poll() if process else None
    except Exception:  # noqa: BLE001 (diagnosis only)
        code = None
    if code is None:
        return "the kernel process ended"
    signals = {128 + 9: "killed (SIGKILL)", 128 + 24: f"CPU time limit ({sandbox.limits.cpu_s} s)",
               128 + 25: f"file size limit ({sandbox.limits.file_mb} MB)", 128 + 11: "segmentation fault",
               128 + 6: "aborted", -9: "killed (SIGKILL)", -24: f"CPU time limit ({sandbox.limits.cpu_s} s)",
               -25: f"file size limit ({sandbox.limits.file_mb} MB)", -11: "segmentation fault"}
    return signals.get(code, f"exit code {code}")


def run_notebook(cells: list[dict], limits: Limits, log_path: Path, uid: int | None = None,
                 files: dict[str, bytes] | None = None, scratch: Path | None = None) -> dict:
    """Execute `cells` (dicts with kind/source/grade_id) in a fresh sandbox; return per-cell results and events.

    `files` are the release's read-only companion files copied into the kernel's folder. Results are also
    appended to `log_path` as JSON lines while the cells run.
    """
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    deadline = started + limits.wall_s
    results: list[CellResult] = []
    events: list[str] = []
    sandbox = Sandbox(limits, uid=uid, scratch=scratch)
    km = kc = None
    with open(log_path, "w", encoding="utf-8") as log:
        def record(item: CellResult) -> None:
            results.append(item)
            log.write(json.dumps(dataclasses.asdict(item)) + "\n")
            log.flush()

        try:
            for name, data in (files or {}).items():
                target = sandbox.work / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            if sandbox.uid is not None:
                subprocess.run(["chown", "-R", f"{sandbox.uid}:{sandbox.uid}", str(sandbox.work)], check=True)
            km = _kernel_manager(sandbox)
            kernel_log = open(log_path.with_suffix(".kernel.log"), "wb")  # the kernel's raw fd 1/2 (capped by fsize)
            km.start_kernel(env=sandbox.env(), stdout=kernel_log, stderr=kernel_log, cwd=str(sandbox.work))
            kernel_log.close()
            kc = km.client()
            kc.start_channels()
            try:
                kc.wait_for_ready(timeout=limits.startup_s)
            except RuntimeError as err:
                events.append(f"the kernel did not start in the sandbox: {err}")
                for index, cell in enumerate(cells):
                    if cell["kind"] != "markdown":
                        record(CellResult(index, cell["kind"], cell.get("grade_id"), "not_run",
                                          evalue="kernel did not start"))
                return {"results": [dataclasses.asdict(r) for r in results], "events": events,
                        "infrastructure_error": True, "seconds": time.monotonic() - started,
                        "mechanisms": sandbox.mechanisms}
            runner = _Runner(km, kc, sandbox, deadline)
            stopped = ""
            for index, cell in enumerate(cells):
                if cell["kind"] == "markdown" or not cell["source"].strip():
                    continue
                if stopped:
                    record(CellResult(index, cell["kind"], cell.get("grade_id"), "not_run", evalue=stopped))
                    continue
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    stopped = f"notebook time limit ({limits.wall_s:g} s) reached before {_label(index, cell)}"
                    events.append(stopped)
                    record(CellResult(index, cell["kind"], cell.get("grade_id"), "not_run", evalue=stopped))
                    continue
                canary = ""
                if cell["kind"] == "test":
                    for code, expected in _canaries():
                        probe = runner.execute(code, min(10.0, remaining), store_history=False)
                        if probe["status"] in ("died", "timeout"):
                            break
                        nonce_seen = "canary-" in (probe["evalue"] + probe["traceback"])
                        if probe["status"] != "error" or probe["ename"] != expected or not nonce_seen:
                            canary = (f"`{code.split('(')[0][:40]}...` should fail with {expected} but the kernel "
                                      f"reported {probe['status']} {probe['ename']}".strip())
                            break
                out = runner.execute(cell["source"], min(limits.cell_s, deadline - time.monotonic()))
                item = CellResult(index, cell["kind"], cell.get("grade_id"), out["status"], out["ename"],
                                  out["evalue"][:TEXT_CAP], out["traceback"], out["output"],
                                  out["output_bytes"], round(out["seconds"], 3), canary)
                if out["status"] == "died":
                    reason = _death_reason(sandbox, km)
                    item.evalue = reason
                    stopped = f"kernel died at {_label(index, cell)}: {reason}"
                    events.append(stopped)
                elif out["status"] == "timeout":
                    wall = deadline - time.monotonic() <= 0
                    stopped = (f"notebook time limit ({limits.wall_s:g} s) reached in {_label(index, cell)}" if wall
                               else f"{_label(index, cell)} ran past its time limit ({limits.cell_s:g} s)")
                    item.evalue = stopped
                    events.append(stopped + "; the kernel was stopped")
                record(item)
                if stopped and km.is_alive():
                    km.shutdown_kernel(now=True)
        finally:
            peak = sandbox.peak_memory_mb()
            if kc is not None:
                kc.stop_channels()
            if km is not None:
                try:
                    if km.has_kernel:
                        km.shutdown_kernel(now=True)
                except Exception:  # noqa: BLE001 (the sandbox cleanup below kills what is left)
                    pass
                km.cleanup_resources() if hasattr(km, "cleanup_resources") else None
            sandbox.cleanup()
    return {"results": [dataclasses.asdict(r) for r in results], "events": events, "infrastructure_error": False,
            "seconds": time.monotonic() - started, "mechanisms": sandbox.mechanisms, "peak_memory_mb": peak}
