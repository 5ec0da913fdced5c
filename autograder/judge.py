"""The judge: where a test is decided at grading, in a process the student's code never runs in.

Once per batch the judge (`python -m autograder.judge FOLDER`, started by `Judge`) runs the instructor's notebook:
the lesson's cells, the instructor's solutions and every test, visible and hidden. Just before each exercise's
solution cell it forks a *fork point*, which keeps that state and waits on a Unix socket. To grade exercise E of a
student, the grader's executor hands E's fork point the connection the student's kernel opened (the kernel runs
`infopt.grading.remote.serve` in place of the test cell); the fork point forks a judge child, which binds E's names
to `StudentFunction`s on that connection, runs the cells from E's solution cell to its test cell (the test: visible
and hidden checks, from the instructor's source), and writes the verdict back to the executor. The hidden tests,
their inputs' generator, expected values, references and comparisons exist only here; the kernel sees the
arguments of each call and nothing else.

    with Judge(master, files, folder) as judge:      # the grader's side (one per batch)
        verdict = judge.run_test("topo", kernel_fd, seed=1, timeout=180)
"""
from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
READY_POLL_S = 0.05
OUTPUT_CAP = 64 * 1024


def defined_names(source: str) -> list[str]:
    """The names a solution cell binds at its top level (its functions, classes and assignments)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names += [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
    return list(dict.fromkeys(names))


def in_kernel(unit_dir: Path) -> dict[str, str]:
    """{exercise: why} for the exercises whose tests still run inside the student's kernel: `[[in_kernel]]` tables of
    the unit's `unit.toml` (their arguments are objects that cannot cross to the judge)."""
    import tomllib

    path = Path(unit_dir) / "unit.toml"
    if not path.is_file():
        return {}
    entries = tomllib.loads(path.read_text()).get("in_kernel", [])
    return {str(e["exercise"]): str(e["why"]) for e in entries if isinstance(e, dict) and "exercise" in e}


def judge_cells(master: list) -> list[dict]:
    """The instructor's cells as the judge runs them: kind, source, grade_id, and each solution cell's names."""
    cells = []
    for cell in master:
        if getattr(cell, "cell_type", "code") != "code" or cell.kind == "markdown":
            continue
        entry = {"kind": cell.kind, "source": cell.source, "grade_id": cell.grade_id}
        if cell.kind == "solution":
            entry["names"] = defined_names(cell.source)
        cells.append(entry)
    return cells


# ----- the grader's side -----------------------------------------------------------------------------------------
class Judge:
    """One judge process for a batch: the instructor's notebook run once, a fork point per exercise."""

    def __init__(self, master: list, files: dict[str, bytes] | None, folder: Path, timeout_s: float = 900.0,
                 in_kernel: dict[str, str] | None = None) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        work = self.folder / "work"
        work.mkdir(exist_ok=True)
        for rel, data in (files or {}).items():
            path = work / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        cells = judge_cells(master)
        self.exercises = [c["grade_id"] for c in cells if c["kind"] == "solution" and c["grade_id"] not in (
            in_kernel or {})]
        # a judged test that guards a call (`forbidding`, `forbid`) runs it in the student's clean room, and one that
        # runs a compiled kernel runs it in a bare room (infopt.grading.clean_room)
        self.rooms = any(word in c["source"] for c in cells
                         for word in ("forbid", "compile_kernel", "compile_tuned", "built_ir"))
        (self.folder / "job.json").write_text(json.dumps({"cells": cells}))
        env = dict(os.environ, MPLBACKEND="Agg", PLOTLY_RENDERER="json", BROWSER="true", OMP_NUM_THREADS="1",
                   OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",  # as in the kernel's sandbox: same numerics
                   PYDEVD_DISABLE_FILE_VALIDATION="1", IPYTHONDIR=str(self.folder / "ipython"))
        env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        self.log = open(self.folder / "judge.log", "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "autograder.judge", str(self.folder)], cwd=work,
                                     env=env, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self.started = time.monotonic()
        self.timeout_s = timeout_s

    def __enter__(self) -> "Judge":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def spec(self) -> dict:
        """What a grading job needs to reach this judge from another process (plain data)."""
        return {"folder": str(self.folder), "exercises": self.exercises, "pid": self.proc.pid,
                "rooms": self.rooms}

    def close(self) -> None:
        """Stop the judge, its fork points and any judge child left."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=10)
        self.log.close()

    def problems(self) -> list[str]:
        return problems(self.folder)


def problems(folder: Path | str) -> list[str]:
    """What went wrong in the judge's own run of the instructor's notebook (a harness bug, reported per run)."""
    path = Path(folder) / "problems.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line)["text"] for line in path.read_text().splitlines() if line.strip()]


def run_test(folder: Path | str, exercise: str, kernel: socket.socket, seed: int | None, timeout: float,
             judge_pid: int | None = None, memory_mb: int = 2048, room: socket.socket | None = None) -> dict:
    """Grade `exercise`'s test against the student's kernel on the connection `kernel` (and its clean room on
    `room`, where guarded calls run): the verdict, as a dict {'status': 'ok'|'error', 'ename', 'evalue', 'line',
    'frames', 'calls', 'flags'}. A judge that fails is a harness error."""
    deadline = time.monotonic() + timeout
    path = Path(folder) / f"fp-{exercise}.sock"
    while not (Path(folder) / f"fp-{exercise}.ready").exists():
        gone = judge_pid is not None and not _alive(judge_pid)
        if gone and not (Path(folder) / f"fp-{exercise}.ready").exists():
            return _harness(f"the judge process ended before it reached {exercise} (see its log)")
        if (Path(folder) / "failed").exists() or time.monotonic() > deadline:
            why = (Path(folder) / "failed").read_text()[-500:] if (Path(folder) / "failed").exists() else (
                "it was not ready in time")
            return _harness(f"the judge has no fork point for {exercise}: {why}")
        time.sleep(READY_POLL_S)
    pid = 0
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.settimeout(max(deadline - time.monotonic(), 0.1))
            sock.connect(str(path))
            request = json.dumps({"seed": seed, "cpu_s": timeout, "memory_mb": memory_mb}).encode()
            socket.send_fds(sock, [request], [kernel.fileno()] + ([room.fileno()] if room is not None else []))
            reader = sock.makefile("rb")
            first = reader.readline()
            pid = int(json.loads(first)["pid"]) if first else 0
            line = reader.readline()
            if not line:
                return _harness("the judge process ended without a verdict")
            return json.loads(line)
        except (OSError, ValueError, KeyError, socket.timeout) as err:
            if pid:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            if isinstance(err, socket.timeout):
                return {"status": "timeout", "ename": "TimeoutError",
                        "evalue": f"the test did not finish within {timeout:.0f} s"}
            return _harness(f"the judge failed: {type(err).__name__}: {err}")


def _alive(pid: int) -> bool:
    """True while process `pid` runs (a zombie, dead but not yet reaped by the grader, counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def _harness(text: str) -> dict:
    return {"status": "error", "ename": "HarnessError", "evalue": f"bug in the grader, not in your code: {text}",
            "harness": True}


# ----- the judge process -----------------------------------------------------------------------------------------
def _die_with_parent() -> None:
    """PR_SET_PDEATHSIG: this process is killed when the grader that started it goes (Linux)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)


def _after_fork() -> None:
    """A forked judge uses no thread pool whose threads it lacks (torch's intra-op pool hangs in a fork otherwise)."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


def _note(folder: Path, text: str) -> None:
    with open(folder / "problems.jsonl", "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"text": text[:2000]}) + "\n")


def main(folder: str) -> None:
    """Run the instructor's notebook once; fork a fork point before each solution cell; then wait to be killed."""
    _die_with_parent()
    root = Path(folder).resolve()
    cells = json.loads((root / "job.json").read_text())["cells"]
    try:
        from ipykernel.inprocess.manager import InProcessKernelManager

        km = InProcessKernelManager()
        km.start_kernel()
        shell = km.kernel.shell
    except Exception as err:  # noqa: BLE001 (reported to every request)
        (root / "failed").write_text(f"the judge could not start its shell: {type(err).__name__}: {err}")
        raise
    for index, cell in enumerate(cells):
        if not cell["source"].strip():
            continue
        if cell["kind"] == "solution":
            if os.fork() == 0:
                try:
                    _after_fork()
                    _fork_point(root, shell, cells, index)
                finally:
                    os._exit(0)
        result = shell.run_cell(cell["source"], store_history=False, silent=True)
        if not result.success:
            err = result.error_in_exec or result.error_before_exec
            _note(root, f"the instructor's cell {index} ({cell.get('grade_id') or cell['kind']}) raised "
                        f"{type(err).__name__}: {err}")
    (root / "done").touch()
    while True:
        signal.pause()


def _fork_point(root: Path, shell: Any, cells: list[dict], index: int) -> None:
    """Wait for grading requests for the exercise whose solution cell is cells[index]; fork a judge child each."""
    exercise = cells[index]["grade_id"]
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)   # judge children are reaped by the kernel
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path = root / f"fp-{exercise}.sock"
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    listener.bind(str(path))
    listener.listen(64)
    (root / f"fp-{exercise}.ready").touch()
    while True:
        conn, _ = listener.accept()
        fds: list[int] = []
        try:
            message, fds, _flags, _addr = socket.recv_fds(conn, 4096, 2)
            if os.fork() == 0:
                listener.close()
                try:
                    _judge_child(shell, cells, index, conn, json.loads(message or b"{}"), fds[0] if fds else -1,
                                 fds[1] if len(fds) > 1 else -1)
                finally:
                    os._exit(0)
        except Exception as err:  # noqa: BLE001 (one bad request never stops the fork point)
            with contextlib.suppress(OSError):
                conn.sendall(json.dumps({"pid": 0}).encode() + b"\n" + json.dumps(
                    _harness(f"the fork point could not take the request: {type(err).__name__}: {err}")).encode()
                             + b"\n")
        finally:
            conn.close()
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)


def _judge_child(shell: Any, cells: list[dict], index: int, conn: socket.socket, request: dict, fd: int,
                 room_fd: int = -1) -> None:
    """Bind the exercise's names to the student's functions, run its cells and its test, write the verdict."""
    from infopt.grading import cases, guards
    from infopt.grading.remote import Channel, StudentFunction

    guards.IN_JUDGE = True   # no native code from here on (infopt.grading.guards.check_native)

    signal.signal(signal.SIGCHLD, signal.SIG_DFL)   # the test may run subprocesses and wait for them
    _after_fork()
    conn.sendall(json.dumps({"pid": os.getpid()}).encode() + b"\n")
    if fd < 0:
        conn.sendall(json.dumps(_harness("no connection to the kernel came with the request")).encode() + b"\n")
        return
    _limit_self(float(request.get("cpu_s") or 600), int(request.get("memory_mb") or 2048))
    seed = request.get("seed")
    if seed is not None:
        os.environ[cases.SEED_ENV] = str(int(seed))
    cases._seed = None
    channel = Channel(socket.socket(fileno=fd), socket.socket(fileno=room_fd) if room_fd >= 0 else None)
    guards.RUNNER = channel if channel.room is not None else None   # native code runs in its bare room
    solution = cells[index]
    exercise = solution["grade_id"]
    for name in solution.get("names", []):
        shell.user_ns[name] = StudentFunction(channel, name)
    verdict: dict = {"status": "error", "ename": "HarnessError",
                     "evalue": f"bug in the grader, not in your code: no test cell {exercise}_test after the "
                               "exercise", "harness": True}
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        for cell in cells[index + 1:]:
            if cell["kind"] == "test" and cell["grade_id"] == f"{exercise}_test":
                verdict = _run_test_cell(shell, cell)
                break
            if cell["source"].strip():
                shell.run_cell(cell["source"], store_history=False, silent=True)
    verdict["calls"] = channel.calls
    verdict["flags"] = channel.flags
    channel.done()
    conn.sendall(json.dumps(verdict).encode() + b"\n")


def _limit_self(cpu_s: float, memory_mb: int) -> None:
    """Cap this judge child as the student's sandbox is capped: what the kernel sends back (a graph, a program the
    library then simulates) cannot make it run or grow without bound. Memory: what the fork point had, plus the cap."""
    import resource

    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CPU, (int(cpu_s) + 10, int(cpu_s) + 10))
    with contextlib.suppress(ValueError, OSError):
        status = Path("/proc/self/status").read_text()
        size_kb = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmSize:")))
        cap = size_kb * 1024 + memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def _run_test_cell(shell: Any, cell: dict) -> dict:
    """Run the test's code (visible and hidden) in the notebook's namespace; its verdict as plain data."""
    filename = f"<test {cell['grade_id']}>"
    try:
        code = compile(cell["source"], filename, "exec")
    except SyntaxError as err:
        return _harness(f"the test does not compile ({err.msg}, line {err.lineno})")
    try:
        exec(code, shell.user_ns)  # noqa: S102 (the instructor's own test, in the judge)
    except BaseException as err:  # noqa: BLE001 (every way a test can fail is a verdict)
        from infopt.grading.errors import HarnessError

        line = 0
        tb = err.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == filename:
                line = tb.tb_lineno
            tb = tb.tb_next
        frames: list = []
        seen, chain = set(), err
        while chain is not None and id(chain) not in seen:
            seen.add(id(chain))
            frames = frames or list(getattr(chain, "student_frames", []) or [])
            chain = chain.__cause__ or chain.__context__
        try:
            text = str(err)
        except Exception:  # noqa: BLE001
            text = "<the message could not be read>"
        name = getattr(err, "student_type", None) or type(err).__name__
        return {"status": "error", "ename": str(name)[:200], "evalue": text[:8000], "line": line,
                "frames": frames[-12:], "harness": isinstance(err, HarnessError)}
    return {"status": "ok"}


if __name__ == "__main__":
    main(sys.argv[1])
