"""Run one assembled notebook in its sandbox, cell by cell, recording each cell's result as soon as it finishes.

The grader drives the kernel with jupyter_client over IPC sockets (the kernel has no network). Each cell's result is
appended to a JSON-lines log before the next cell starts, so a kernel that dies at cell k keeps the credit of the
cells before it. Student and instructor code cells run as ordinary cells. Test cells never do: each is sent sealed
(autograder/verdicts.py) and its pass or fail is the verdict the kernel's signer thread wrote to the verdict
channel (autograder/kernel_boot.py), never the execute reply, so a kernel whose execution machinery was replaced
cannot report a pass. Before each test, three probes that must fail are sent the same way, indistinguishable from
the test; a probe that passes, or gives no verdict, voids the test and flags the submission, and so does a test
that gives no verdict. Everything written to the log has been scrubbed of hidden-test and solution text.

With a judge (autograder/judge.py), a test cell runs in neither way: the kernel runs `infopt.grading.remote.serve`
in its place, answering the judge's calls on the student's functions, and the verdict is the judge's. The hidden
tests, their expected values and the comparisons never enter the kernel.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import socket
import threading
import time
from pathlib import Path
from queue import Empty
from typing import Callable

from .assemble import exercise_of
from .clean_rooms import CleanRooms
from .persistence import startup_files
from .sandbox import Limits, Sandbox
from .scrub import Scrubber
from .verdicts import PROBE_SECONDS, Channel, Sealer, boot_files, kernel_argv, library_modules, new_key
from .verdicts import trusted_before

TEXT_CAP = 4000  # characters of each cell's output kept for feedback
_POLL_S = 0.1
_GRACE_S = 2.0   # after a trigger's reply, how long a verdict that never started may still begin
_REPLY_S = 10.0  # after a trigger's last record, how long its execute reply may take (a loaded machine is slow)
_KERNEL_LOG_CAP = 256 * 1024
MESSAGE_CAP = 8 * 2**20  # bytes of one kernel message the grader takes in; a bigger one never reaches its memory
QUEUE_CAP = 32           # kernel messages the grader queues per socket; past that, the kernel's are dropped


@dataclasses.dataclass
class CellResult:
    """What happened to one code cell: status ok|error|timeout|died|not_run|no_verdict, the error, output, seconds.

    For a test cell: `canary` is non-empty when a probe before it passed or gave no verdict, `tamper` names the
    checking machinery found changed when its verdict was signed (either one: the test is not counted), `line` is
    the test cell's line where the failure surfaced and `frames` the (file, line, function, text) below it."""

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
    canary: str = ""
    tamper: str = ""
    line: int = 0
    frames: list = dataclasses.field(default_factory=list)


def capped_context():
    """A ZeroMQ context whose sockets refuse any message over MESSAGE_CAP and queue at most QUEUE_CAP.

    The kernel's output (a flood of display data: 24 x 160 MB once) would otherwise be read into the grader's
    memory, outside the sandbox's memory cap. ZeroMQ refuses an oversized message before it is allocated and drops
    the connection with it for good; _Runner connects the output channel again (IopubWatch), so the grader loses
    that output and what the kernel sent meanwhile, never the rest of the notebook's."""
    import zmq

    context = zmq.Context()
    context.setsockopt(zmq.MAXMSGSIZE, MESSAGE_CAP)
    context.setsockopt(zmq.RCVHWM, QUEUE_CAP)
    return context


def _kernel_manager(sandbox: Sandbox, context=None):
    """A jupyter_client KernelManager whose kernel command (the bootstrap) runs inside `sandbox`, over IPC."""
    from jupyter_client.manager import KernelManager

    class SandboxedKernelManager(KernelManager):
        def format_kernel_cmd(self, extra_arguments=None):  # noqa: D102 (jupyter_client hook)
            sandbox.prepare_run_files()
            return sandbox.wrap(kernel_argv(sandbox.run_dir, self.connection_file))

    km = SandboxedKernelManager(kernel_name="python3", transport="ipc", ip=str(sandbox.run_dir / "kernel"),
                                connection_file=str(sandbox.run_dir / "kernel.json"),
                                **({"context": context} if context is not None else {}))
    km.shutdown_wait_time = 0.2
    return km


class IopubWatch:
    """Connects a kernel client's output channel (iopub) again after ZeroMQ dropped it for an oversized message."""

    def __init__(self, kc) -> None:
        self.kc, self.dropped = kc, 0
        self._watch()

    def _watch(self) -> None:
        import zmq

        self.monitor = self.kc.iopub_channel.socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)

    def check(self) -> bool:
        """Reconnect if the connection was dropped since the last check; True when it was."""
        if not self.monitor.poll(0):
            return False
        while self.monitor.poll(0):
            self.monitor.recv_multipart()
        old = self.kc.iopub_channel
        old.socket.disable_monitor()
        self.monitor.close(0)
        old.close()
        self.kc._iopub_channel = None  # jupyter_client's property connects a fresh one (subscribed to everything)
        self.dropped += 1
        self._watch()
        return True

    def close(self) -> None:
        """Stop watching (before the client's channels are stopped)."""
        try:
            self.kc.iopub_channel.socket.disable_monitor()
        except Exception:  # noqa: BLE001 (the socket may be closed already)
            pass
        self.monitor.close(0)


class _Runner:
    """Executes cells on one kernel, enforcing the per-cell wall clock, reading the verdict channel meanwhile."""

    def __init__(self, km, kc, channel: Channel) -> None:
        self.km, self.kc, self.channel = km, kc, channel
        self.iopub = IopubWatch(kc)

    def execute(self, code: str, timeout: float, store_history: bool = True,
                until: Callable[[], bool] | None = None, begun: Callable[[], bool] | None = None) -> dict:
        """Run code; return {'status', 'reply', 'ename', 'evalue', 'traceback', 'output', 'output_bytes', 'seconds'}.

        With `until` (a trigger), also wait for the record it names: the cell is done when that record arrived
        (and the reply, or 10 s more), or when the reply came and `begun()` stayed false for a grace period."""
        start = time.monotonic()
        msg_id = self.kc.execute(code, store_history=store_history, allow_stdin=False, stop_on_error=False)
        result = {"status": "", "reply": "", "ename": "", "evalue": "", "traceback": "", "output": "",
                  "output_bytes": 0}
        pieces: list[str] = []
        kept = 0
        reply = reply_at = arrived_at = None
        idle = False
        limit = start + timeout
        last_alive_check = start
        while True:
            now = time.monotonic()
            if now > limit:
                result["status"] = "timeout"
                break
            self.channel.poll()
            if self.iopub.check() and kept < TEXT_CAP:
                pieces.append(f"\n[output over {MESSAGE_CAP // 2**20} MB in one message: dropped by the grader]\n")
                kept += len(pieces[-1])
            executed = reply is not None and (idle or now > reply_at + 2.0)  # the idle status may get lost
            if until is None:
                if executed:
                    break
            else:
                if arrived_at is None and until():
                    arrived_at = now
                if arrived_at is not None and (executed or now > arrived_at + _REPLY_S):
                    break
                if executed and not (begun and begun()) and now > reply_at + _GRACE_S:
                    break
            got = False
            try:
                msg = self.kc.get_iopub_msg(timeout=_POLL_S if reply is None or until else 0.02)
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
                    self.channel.poll()
                    result["status"] = "died"
                    break
        result["output"] = _strip_ansi("".join(pieces))
        result["reply"] = "" if reply is None else ("ok" if reply.get("status") == "ok" else "error")
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


_INCIDENTS = {"blocked": "blocked at run time", "startup": "tried to change the kernel's startup files",
              "forged": "tried to forge a grading message", "replay": "replayed or reordered a test",
              "overlap": "ran a test while another one was running",
              "namespace": "ran a test outside the notebook's namespace", "signer": "grader error in the signer"}


class _Evidence:
    """Run-level tamper evidence gathered while the cells run: flags (deduplicated, in order) and events."""

    def __init__(self, scrub: Scrubber) -> None:
        self.flags: list[str] = []
        self.scrub = scrub

    def flag(self, text: str) -> None:
        text = self.scrub(text)
        if text not in self.flags:
            self.flags.append(text)

    def from_channel(self, channel: Channel) -> None:
        for record in channel.records:
            if record.get("k") == "incident":
                what = str(record.get("what", ""))
                self.flag(f"{_INCIDENTS.get(what, what)}: {record.get('text', '')}")
            elif record.get("k") == "verdict" and record.get("changed"):
                self.flag(f"changed the kernel's execution machinery or library code: {record['changed']}")
        for problem in channel.problems:
            self.flag(problem)

    def check_reply(self, label: str, reply: str, verdict: dict | None) -> None:
        """A kernel whose execute reply disagrees with the signed verdict had its execution machinery replaced."""
        if verdict is None:
            return
        passed = verdict.get("status") == "ok"
        if reply == "":
            self.flag(f"the kernel sent no execute reply for {label} (its execution machinery was replaced)")
        elif (reply == "ok") != passed:
            self.flag(f"the kernel's execute reply for {label} said {reply!r} but the grader's signed verdict was "
                      f"{'a pass' if passed else 'a failure'}: its execution machinery (run_cell, do_execute or "
                      "the reply path) was replaced")


def _chown_tree(root: Path, uid: int) -> None:
    """chown -R without a subprocess (the sandbox's files must belong to its uid)."""
    os.chown(root, uid, uid)
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            os.chown(os.path.join(folder, name), uid, uid, follow_symlinks=False)


def _prepare(sandbox: Sandbox, files: dict[str, bytes] | None, key: bytes) -> Path:
    """Copy the release's files into the kernel's folder and the bootstrap, key and verdict FIFO into its run folder."""
    for name, data in (files or {}).items():
        target = sandbox.work / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    for name, data in boot_files().items():
        (sandbox.run_dir / name).write_bytes(data)
    key_path = sandbox.run_dir / "key"
    key_path.write_bytes(key)
    key_path.chmod(0o400)
    fifo = sandbox.run_dir / "verdicts"
    os.mkfifo(fifo, 0o600)
    if sandbox.uid is not None:
        _chown_tree(sandbox.work, sandbox.uid)
        _chown_tree(sandbox.run_dir, sandbox.uid)
    return fifo


def _not_run(cells: list[dict], why: str, record: Callable[[CellResult], None]) -> None:
    for index, cell in enumerate(cells):
        if cell["kind"] != "markdown":
            record(CellResult(index, cell["kind"], cell.get("grade_id"), "not_run", evalue=why))


def _detail(channel: Channel, seq: int, scrub: Scrubber) -> dict:
    """The error details the test thread sent after its failure (scrubbed), or {}."""
    record = channel.find("detail", seq)
    try:
        detail = json.loads(record["text"]) if record else {}
    except (ValueError, TypeError):
        detail = {}
    return scrub.deep(detail) if isinstance(detail, dict) else {}


def run_notebook(cells: list[dict], limits: Limits, log_path: Path, uid: int | None = None,
                 files: dict[str, bytes] | None = None, scratch: Path | None = None,
                 scrub: Scrubber | None = None, judge: dict | None = None, seed: int | None = None) -> dict:
    """Execute `cells` (dicts with kind/source/grade_id/author) in a fresh sandbox; return per-cell results, events,
    flags (tamper evidence found while running) and timings.

    `files` are the release's read-only companion files copied into the kernel's folder. Results are appended to
    `log_path` as JSON lines while the cells run, after `scrub` removed hidden-test and solution text from them.
    With `judge` (`Judge.spec()`), the tests of the judge's exercises are decided by the judge under grading `seed`.
    """
    scrub = scrub or Scrubber(())
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    deadline = started + limits.wall_s
    results: list[CellResult] = []
    events: list[str] = []
    timings: dict[str, float] = {}
    evidence = _Evidence(scrub)
    sandbox = Sandbox(limits, uid=uid, scratch=scratch)
    km = kc = channel = runner = listener = rooms = None
    context = capped_context()
    infrastructure = False
    with open(log_path, "w", encoding="utf-8") as log:
        def record(item: CellResult) -> None:
            item.evalue, item.traceback, item.output = scrub(item.evalue), scrub(item.traceback), scrub(item.output)
            results.append(item)
            log.write(json.dumps(dataclasses.asdict(item)) + "\n")
            log.flush()

        try:
            key = new_key()
            channel = Channel(_prepare(sandbox, files, key), key)
            if judge:
                listener = _judge_listener(sandbox)
                if judge.get("rooms"):
                    try:
                        rooms = CleanRooms(limits, cells, scratch)
                    except (OSError, RuntimeError) as err:
                        events.append(f"the grader's clean room did not start ({type(err).__name__}: {err}); "
                                      "guarded calls ran in the kernel")
            km = _kernel_manager(sandbox, context)
            timings["setup_s"] = time.monotonic() - started
            kernel_log = open(log_path.with_suffix(".kernel.log"), "wb")  # the kernel's raw fd 1/2 (capped by fsize)
            km.start_kernel(env=sandbox.env(), stdout=kernel_log, stderr=kernel_log, cwd=str(sandbox.work))
            kernel_log.close()
            kc = km.client(context=context)
            kc.start_channels()
            runner = _Runner(km, kc, channel)
            sealer = Sealer(key)
            try:
                kc.wait_for_ready(timeout=limits.startup_s)
                timings["kernel_s"] = time.monotonic() - started - timings["setup_s"]
                seq, text = sealer.trigger(sealer.hello(library_modules(cells)))
                hello = runner.execute(text, limits.startup_s, store_history=False,
                                       until=lambda: channel.find("hello", seq) is not None)
                if channel.find("hello", seq) is None:
                    raise RuntimeError(f"the grading kernel did not answer the grader's hello ({hello['status']} "
                                       f"{hello['ename']} {hello['evalue'][:200]})".strip())
            except RuntimeError as err:
                events.append(scrub(f"the kernel did not start in the sandbox: {err}"))
                _not_run(cells, "kernel did not start", record)
                infrastructure = True
            timings["start_s"] = time.monotonic() - started - timings["setup_s"]
            timings["hello_s"] = timings["start_s"] - timings.get("kernel_s", timings["start_s"])
            stopped = ""
            for index, cell in enumerate([] if infrastructure else cells):
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
                judged = judge and exercise_of(cell.get("grade_id") or "") in judge["exercises"]
                cap_hits = sandbox.memory_cap_hits()
                if cell["kind"] == "test" and judged:
                    item = _run_judged_test(runner, judge, listener, evidence, cells, index, limits, deadline,
                                            scrub, seed, rooms)
                elif cell["kind"] == "test":
                    item = _run_test(runner, sealer, channel, evidence, cells, index, limits, deadline, scrub)
                else:
                    out = runner.execute(cell["source"], min(limits.cell_s, remaining))
                    item = CellResult(index, cell["kind"], cell.get("grade_id"), out["status"], out["ename"],
                                      out["evalue"][:TEXT_CAP], out["traceback"], out["output"],
                                      out["output_bytes"], round(out["seconds"], 3))
                if item.status == "died":
                    reason = _death_reason(sandbox, km)
                    item.evalue = reason
                    stopped = f"kernel died at {_label(index, cell)}: {reason}"
                    events.append(stopped)
                elif item.status == "timeout":
                    wall = deadline - time.monotonic() <= 0
                    stopped = (f"notebook time limit ({limits.wall_s:g} s) reached in {_label(index, cell)}" if wall
                               else f"{_label(index, cell)} ran past its time limit ({limits.cell_s:g} s)")
                    if sandbox.memory_cap_hits() > cap_hits:   # it spent its time reclaiming memory at the cap
                        stopped += (f", out of memory: it had reached its {sandbox.limits.memory_mb} MB limit, "
                                    "where the system spends its time reclaiming memory instead of running it")
                    item.evalue = stopped
                    events.append(stopped + "; the kernel was stopped")
                record(item)
                if stopped and km.is_alive():
                    km.shutdown_kernel(now=True)
            timings["cells_s"] = time.monotonic() - started - timings["setup_s"] - timings["start_s"]
        finally:
            teardown = time.monotonic()
            peak = sandbox.peak_memory_mb()
            if runner is not None:
                runner.iopub.close()
                if runner.iopub.dropped:
                    events.append(f"{runner.iopub.dropped} output message(s) over {MESSAGE_CAP // 2**20} MB dropped "
                                  "by the grader (the kernel's output channel was connected again)")
            if kc is not None:
                kc.stop_channels()
            if km is not None:
                try:
                    if km.has_kernel:
                        km.shutdown_kernel(now=True)
                except Exception:  # noqa: BLE001 (the sandbox cleanup below kills what is left)
                    pass
                km.cleanup_resources() if hasattr(km, "cleanup_resources") else None
            context.destroy(linger=0)
            if listener is not None:
                listener.close()
            if rooms is not None:
                rooms.close()
            if channel is not None:
                channel.poll()
                channel.close()
                evidence.from_channel(channel)
            for path in startup_files(sandbox.work):
                evidence.flag(f"tried to change the kernel's startup files: left ~/{path} in its home")
            sandbox.cleanup()
            _scrub_kernel_log(log_path.with_suffix(".kernel.log"), scrub)
            timings["teardown_s"] = time.monotonic() - teardown
    return {"results": [dataclasses.asdict(r) for r in results], "events": events,
            "infrastructure_error": infrastructure, "flags": evidence.flags,
            "seconds": time.monotonic() - started, "mechanisms": sandbox.mechanisms, "peak_memory_mb": peak,
            "timings": {k: round(v, 3) for k, v in timings.items()}}


def _run_test(runner: _Runner, sealer: Sealer, channel: Channel, evidence: _Evidence, cells: list[dict],
              index: int, limits: Limits, deadline: float, scrub: Scrubber) -> CellResult:
    """One test cell: three probes that must fail, then the test; the result comes from the signed records."""
    cell = cells[index]
    label = cell.get("grade_id") or f"cell {index + 1}"
    try:
        payload = sealer.test(cell["source"], index, label, trusted_before(cells, index))
    except SyntaxError as err:  # the instructor's test does not parse: a harness bug, never the student's
        return CellResult(index, "test", cell.get("grade_id"), "error", "HarnessError",
                          f"bug in the test harness, not in your code: the test does not compile ({err.msg}, "
                          f"line {err.lineno})")
    size = sealer.size(payload)
    problems: list[str] = []
    for probe in sealer.probes(index, label):
        seq, text = sealer.trigger(probe, size)
        remaining = deadline - time.monotonic()
        out = runner.execute(text, min(PROBE_SECONDS, max(remaining, 0.1)), store_history=False,
                             until=lambda: channel.find("end", seq) is not None,
                             begun=lambda: channel.find("start", seq) is not None)
        verdict = channel.find("verdict", seq)
        evidence.check_reply(f"a probe before {label}", out["reply"], verdict)
        if out["status"] == "died":
            return CellResult(index, "test", cell.get("grade_id"), "died", seconds=round(out["seconds"], 3))
        if verdict is None:
            late = f" (it ran past {PROBE_SECONDS:g} s)" if out["status"] == "timeout" else ""
            problems.append("a probe gave no verdict" + late)
        elif verdict.get("status") != "err":
            problems.append("a probe that must fail passed (the checking machinery was changed)")
        if problems:
            break
    remaining = deadline - time.monotonic()
    seq, text = sealer.trigger(payload)
    out = runner.execute(text, min(limits.cell_s, max(remaining, 0.1)), store_history=False,
                         until=lambda: channel.find("end", seq) is not None,
                         begun=lambda: channel.find("start", seq) is not None)
    verdict = channel.find("verdict", seq)
    evidence.check_reply(label, out["reply"], verdict)
    item = CellResult(index, "test", cell.get("grade_id"), out["status"], output=out["output"],
                      output_bytes=out["output_bytes"], seconds=round(out["seconds"], 3), canary="; ".join(problems))
    if out["status"] in ("died", "timeout"):
        return item
    if verdict is None:
        item.status = "no_verdict"
        item.evalue = "the kernel gave no signed verdict for this test (its execution machinery did not run it)"
        evidence.flag(f"{label}: the test gave no verdict (the kernel did not run it as sent)")
        return item
    item.status = "ok" if verdict.get("status") == "ok" else "error"
    item.tamper = str(verdict.get("tamper", ""))
    if item.status == "error":
        detail = _detail(channel, seq, scrub)
        item.ename = str(detail.get("ename", "Error"))[:200]
        item.evalue = str(detail.get("evalue", ""))[:TEXT_CAP]
        item.line = int(detail.get("line", 0) or 0)
        item.frames = [f for f in detail.get("frames", []) if isinstance(f, list) and len(f) == 4][-12:]
        if verdict.get("status") == "none":
            item.evalue = "the test ended without a verdict"
    return item


JUDGE_SOCKET = "judge.sock"
SERVE_CELL = '__import__("infopt.grading.remote", fromlist=["serve"]).serve({path!r}, globals())'


def _judge_listener(sandbox: Sandbox) -> socket.socket:
    """The socket the kernel's serving cells connect to (in its run folder, which the sandbox shows at its path)."""
    path = sandbox.run_dir / JUDGE_SOCKET
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(4)
    os.chmod(path, 0o600)
    if sandbox.uid is not None:
        os.chown(path, sandbox.uid, sandbox.uid)
    return listener


def _run_judged_test(runner: _Runner, judge: dict, listener: socket.socket, evidence: _Evidence, cells: list[dict],
                     index: int, limits: Limits, deadline: float, scrub: Scrubber, seed: int | None,
                     rooms: CleanRooms | None = None) -> CellResult:
    """One test decided by the judge: the kernel serves the student's functions, the judge runs the test (its
    guarded calls in the student's clean room)."""
    from .judge import run_test

    cell = cells[index]
    label = cell.get("grade_id") or f"cell {index + 1}"
    timeout = min(limits.cell_s, max(deadline - time.monotonic(), 0.1))
    cell_deadline = time.monotonic() + timeout
    connected, finished, stop = threading.Event(), threading.Event(), threading.Event()
    box: dict = {}

    def work() -> None:
        listener.settimeout(0.2)
        try:
            while not stop.is_set():
                try:
                    conn, _ = listener.accept()
                except socket.timeout:
                    continue
                connected.set()
                room = rooms.session(exercise_of(label)) if rooms is not None else None
                if rooms is not None and room is None:
                    evidence.flag(f"{label}: the grader's clean room was gone (started {rooms.restarts + 1} times): "
                                  "this test's guarded calls ran in the kernel")
                with conn, (room or contextlib.nullcontext()):
                    box["verdict"] = run_test(judge["folder"], exercise_of(label), conn, seed,
                                              max(cell_deadline - time.monotonic(), 0.1), judge.get("pid"),
                                              limits.memory_mb, room)
                return
        except Exception as err:  # noqa: BLE001 (a grader failure is this test's harness error)
            box["verdict"] = {"status": "error", "ename": "HarnessError", "harness": True,
                              "evalue": f"bug in the grader, not in your code: {type(err).__name__}: {err}"}
        finally:
            finished.set()

    thread = threading.Thread(target=work, name=f"judge-{label}", daemon=True)
    thread.start()
    out = runner.execute(SERVE_CELL.format(path=str(listener.getsockname())), timeout, store_history=False,
                         until=finished.is_set, begun=connected.is_set)
    if not connected.is_set():
        stop.set()
    thread.join(timeout=5.0)
    verdict = box.get("verdict")
    item = CellResult(index, "test", cell.get("grade_id"), out["status"], output=out["output"],
                      output_bytes=out["output_bytes"], seconds=round(out["seconds"], 3))
    if out["status"] in ("died", "timeout"):
        return item
    if verdict is None:
        item.status = "no_verdict"
        item.evalue = ("your kernel did not answer the grader's calls for this test (the cell that serves them "
                       "was changed or did not run)")
        evidence.flag(f"{label}: the kernel did not answer the grader's calls (its serving cell was changed)")
        return item
    for flag in verdict.get("flags") or []:
        evidence.flag(f"{label}: {scrub(str(flag))[:500]}")
    if verdict.get("status") == "timeout":
        item.status = "timeout"
        item.evalue = str(verdict.get("evalue", ""))
        return item
    item.status = "ok" if verdict.get("status") == "ok" else "error"
    if item.status == "error":
        item.ename = "HarnessError" if verdict.get("harness") else str(verdict.get("ename", "Error"))[:200]
        item.evalue = scrub(str(verdict.get("evalue", "")))[:TEXT_CAP]
        item.line = int(verdict.get("line", 0) or 0)
        item.frames = [f for f in verdict.get("frames", []) if isinstance(f, list) and len(f) == 4][-12:]
    return item


def _scrub_kernel_log(path: Path, scrub: Scrubber) -> None:
    """Keep the last 256 KB of the kernel's raw output, scrubbed (it may hold whatever the student printed)."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            if size > _KERNEL_LOG_CAP:
                handle.seek(size - _KERNEL_LOG_CAP)
            text = handle.read().decode("utf-8", "replace")
        path.write_text(scrub(text), encoding="utf-8")
    except OSError:
        pass

