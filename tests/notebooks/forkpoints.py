"""Fork points: the fast path run inside nbgrader's own execution of the solution, so one run of the notebook serves
both nbgrader's full-marks check and the grading of every variant (stored wrong answers, release stubs).

Why it is sound. The fast path (tests/notebooks/fastpath.py) grades a variant in a child forked from the notebook's
state just before the variant's exercise. Here that state is the one nbgrader's kernel has when it reaches the
exercise's solution cell while grading the solution: the kernel (tests/notebooks/forkpoint_kernel.py, an ordinary
ipykernel with one `pre_run_cell` hook) forks a *fork point* there and carries on untouched; the fork point keeps
that state, cut off from Jupyter (every message it would send to nbgrader is dropped), and waits. When nbgrader is
done the harness releases the fork points one at a time; each grades its exercise's variants exactly as the fast
path does (`fastpath.grade_at`), writes the outcomes and exits. A *control* variant per exercise (the solution
itself) must score full marks from each fork point: a fork point whose state or isolation broke fails loudly
instead of passing a wrong answer off as rejected. The variants never run while nbgrader runs, so they count
against no cell's time limit and never compete with the graded notebook.

    harness:   points = ForkPoints(folder, source_nb, variants, host="solution")
               with points.holding():                 # the fork points wait while nbgrader runs
                   run nbgrader with env=points.env()
               result = points.collect(nbgrader_scores, nbgrader_errors)   # a fastpath.FastResult
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import sys
import time
from pathlib import Path

ENV = "INFOPT_FORKPOINTS"           # the fork points' folder (job, lock, pids, results)
OWNER_ENV = "INFOPT_FORKPOINTS_OWNER"  # the harness's pid: fork points give up when it is gone
LAUNCHER = Path(__file__).with_name("forkpoint_kernel.py")
SETSID_WAIT_S = 10.0  # how long the kernel waits for a new fork point to leave its process group


def control_variant(exercise: str) -> str:
    """The id of the variant that grades an exercise's own solution from its fork point (must score full marks)."""
    return f"control:{exercise}"


# ----- the harness's side ---------------------------------------------------------------------------------------
class ForkPoints:
    """The folder a run of nbgrader shares with the fork points its solution kernel makes (see module doc)."""

    def __init__(self, folder: Path, source_nb, variants: list, host: str, cell_timeout_s: float) -> None:
        from tests.notebooks.fastpath import job_cells

        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.cells = job_cells(source_nb)
        exercises = [c["grade_id"] for c in self.cells if c["role"] == "solution"]
        self.variants = [v.__dict__ for v in variants]
        seeds = sorted({s for v in variants for s in (v.seeds or ())})[:1]
        self.variants += [{"id": control_variant(ex), "exercise": ex, "code": None, "prelude": "",
                           "seeds": list(seeds)} for ex in exercises
                          if any(v["exercise"] == ex for v in self.variants)]
        self.exercises = sorted({v["exercise"] for v in self.variants})
        self.cell_timeout_s = cell_timeout_s
        (self.folder / "job.json").write_text(json.dumps({"cells": self.cells, "variants": self.variants,
                                                           "cell_timeout_s": cell_timeout_s, "host": host}))
        (self.folder / "go.lock").touch()
        spec = self.folder / "jupyter" / "kernels" / "python3"
        spec.mkdir(parents=True, exist_ok=True)
        (spec / "kernel.json").write_text(json.dumps({
            "argv": [sys.executable, str(LAUNCHER), "-f", "{connection_file}"],
            "display_name": "Python 3 (ipykernel)", "language": "python", "metadata": {"debugger": True}}))
        self._lock: int | None = None

    def env(self) -> dict[str, str]:
        """What nbgrader's environment needs so that its kernels are fork-point kernels (found first on
        JUPYTER_PATH under the notebooks' own kernel name)."""
        path = os.pathsep.join(p for p in (str(self.folder / "jupyter"), os.environ.get("JUPYTER_PATH", "")) if p)
        return {ENV: str(self.folder), OWNER_ENV: str(os.getpid()), "JUPYTER_PATH": path}

    @contextlib.contextmanager
    def holding(self):
        """Hold the fork points back (they wait for this lock) while the body runs nbgrader."""
        fd = os.open(self.folder / "go.lock", os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield self
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def collect(self, scores: dict[str, tuple[float, float]], errors: list[str], budget_s: float):
        """Wait for every fork point's outcomes (killing what is left past `budget_s`) and return them as the
        fast path's result: the solution's test scores and errors as nbgrader saw them, and every variant's outcome
        (a variant whose fork point never came, or died, gets a harness failure naming why)."""
        from tests.notebooks.fastpath import FastResult, Outcome

        began = time.monotonic()
        outcomes: dict[str, dict] = {}
        pending = set(self.exercises)
        while pending:
            for ex in sorted(pending):
                result, pid = self.folder / f"result-{ex}.json", _read_pid(self.folder / f"pid-{ex}")
                if result.is_file():
                    outcomes.update(json.loads(result.read_text()))
                    pending.discard(ex)
                elif pid is None or not _alive(pid):
                    if result.is_file():  # written between the two looks
                        continue
                    died = self.folder / f"died-{ex}.txt"
                    why = ("the solution run never reached its solution cell" if pid is None else
                           f"its fork point (pid {pid}) ended without a result" + (
                               f": {died.read_text()[-1000:]}" if died.is_file() else
                               " (killed by a signal: no traceback was written)"))
                    outcomes.update(self._failed(ex, why))
                    pending.discard(ex)
            if pending and time.monotonic() - began > budget_s:
                for ex in sorted(pending):
                    outcomes.update(self._failed(ex, f"its fork point ran past the budget of {budget_s:.0f} s"))
                break
            if pending:
                time.sleep(0.05)
        self.kill_leftovers()
        solution = {gid: Outcome(test=gid, score=s, max=m, status="pass" if s == m else "fail")
                    for gid, (s, m) in scores.items()}
        return FastResult(solution=solution, variants={k: Outcome(**v) for k, v in outcomes.items()},
                          errors=list(errors), seconds=time.monotonic() - began)

    def _failed(self, exercise: str, why: str) -> dict[str, dict]:
        test = f"{exercise}_test"
        top = next((c["points"] for c in self.cells if c["grade_id"] == test), 0.0)
        out = {}
        for v in self.variants:
            if v["exercise"] == exercise:
                for seed in v["seeds"] or [0]:
                    vid = f"{v['id']}@seed{seed}" if seed else v["id"]
                    out[vid] = {"test": test, "score": 0.0, "max": top, "status": "harness",
                                "message": f"not graded: {why}", "seconds": 0.0}
        return out

    def close(self) -> None:
        """Kill what is left of the fork points and remove their folder."""
        import shutil

        self.kill_leftovers()
        shutil.rmtree(self.folder, ignore_errors=True)

    def kill_leftovers(self) -> None:
        """Kill every fork point still alive (each runs in its own session, so its variants go with it)."""
        for pidfile in self.folder.glob("pid-*"):
            pid = _read_pid(pidfile)
            if pid is not None and _alive(pid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text())
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie child of ours does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# ----- the kernel's side ----------------------------------------------------------------------------------------
def install(shell, grade_at) -> None:
    """In a kernel started by forkpoint_kernel.py: when ENV is set and this kernel runs the host submission (nbgrader
    runs each submission in autograded/<student>/<unit>/), fork a fork point before each solution cell that has
    variants. `grade_at` is fastpath.grade_at."""
    folder = os.environ.get(ENV)
    if not folder:
        return
    job = json.loads(Path(folder, "job.json").read_text())
    if Path.cwd().resolve().parts[-2:-1] != (job["host"],):
        return
    cells = job["cells"]
    at: dict[str, list[int]] = {}
    for i, c in enumerate(cells):
        if c["role"] == "solution":
            at.setdefault(c["source"], []).append(i)
    pending: dict[str, list[dict]] = {}
    for v in job["variants"]:
        pending.setdefault(v["exercise"], []).append(v)

    def before_cell(info) -> None:
        indexes = at.get(getattr(info, "raw_cell", None))
        if not indexes:
            return
        index = indexes.pop(0)
        exercise = cells[index]["grade_id"]
        variants = pending.pop(exercise, None)
        if variants:
            _fork_point(shell, grade_at, Path(folder), cells, index, exercise, variants, float(job["cell_timeout_s"]))

    shell.events.register("pre_run_cell", before_cell)


def _fork_point(shell, grade_at, folder: Path, cells: list[dict], index: int, exercise: str, variants: list[dict],
                timeout_s: float) -> None:
    """Fork the fork point of `exercise`; the kernel returns at once and runs the cell as if nothing happened."""
    try:
        claim = os.open(folder / f"pid-{exercise}", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    except FileExistsError:  # a restarted kernel: that exercise has its fork point already
        return
    # The kernel waits until the fork point has left its process group: at shutdown ipykernel SIGKILLs the children
    # still in its group, and a fork point not yet scheduled when a short last exercise ends would go with them
    # (seen under CI load: the fixture's last exercise lost its fork point).
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid:
        os.close(ready_w)
        os.write(claim, str(pid).encode())
        os.close(claim)
        _wait_readable(ready_r, SETSID_WAIT_S)
        os.close(ready_r)
        return
    code = 0
    try:
        os.setsid()  # out of the kernel's process group: the kernel's shutdown must not take it along
        os.write(ready_w, b"1")
        os.close(ready_w)
        os.close(ready_r)
        os.close(claim)
        _cut_off_from_jupyter(shell)
        lock = _wait_for_go(folder, int(os.environ.get(OWNER_ENV, "0") or 0))
        outcomes = grade_at(shell, cells, index, variants, timeout_s)
        part = folder / f"result-{exercise}.json.part"
        part.write_text(json.dumps(outcomes))
        part.replace(folder / f"result-{exercise}.json")
        fcntl.flock(lock, fcntl.LOCK_UN)
    except BaseException:  # noqa: BLE001 (the harness reports a fork point that ends without a result, and why)
        code = 1
        with contextlib.suppress(BaseException):
            import traceback

            (folder / f"died-{exercise}.txt").write_text(traceback.format_exc()[-2000:])
    finally:
        os._exit(code)


def _wait_readable(fd: int, timeout_s: float) -> None:
    """Block until `fd` has data or its writer closed it, at most `timeout_s`."""
    import select

    with contextlib.suppress(OSError):
        select.select([fd], [], [], timeout_s)


def _cut_off_from_jupyter(shell) -> None:
    """Drop every message this process would send on the kernel's sockets (outputs, displays, widgets' comms), and
    point its standard streams at /dev/null (fd 1 and 2 are the kernel's pipes, which it forwards to nbgrader as
    the running cell's output): both are shared with the kernel nbgrader is still talking to."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    kernel = getattr(shell, "kernel", None)
    session = getattr(kernel, "session", None)
    if session is not None:
        session.send = lambda *args, **kwargs: None
    for hook in ("display_pub", "displayhook"):
        target = getattr(shell, hook, None)
        if getattr(target, "session", None) is not None and target.session is not session:
            target.session.send = lambda *args, **kwargs: None


def _wait_for_go(folder: Path, owner: int) -> int:
    """Block until the harness releases the fork points (one at a time); exit if the harness is gone."""
    fd = os.open(folder / "go.lock", os.O_RDWR)
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            pass
        if owner and not _alive(owner):
            os._exit(2)
        time.sleep(0.05)
