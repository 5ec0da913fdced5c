"""The fast path: grade many variants of one exercise without running the whole notebook once per variant.

The solution notebook runs once, top to bottom, in one Python process (an in-process IPython kernel, so magics,
`display` and widgets behave as in a notebook). Just before an exercise's solution cell the process forks once per
variant to grade (a stored wrong answer, a mutant, a grading seed). The child runs the variant's code in place of
the solution cell, then every code cell after it up to and including the exercise's test cell, exactly as the
notebook would run them, and reports how that test cell scored; the parent carries on with the solution.

A variant therefore costs the cells between its exercise and its test, not the notebook, and a variant that hangs,
crashes or corrupts memory takes only its own child with it. The state a test sees is the state at its own place
in the notebook, as under nbgrader. Scoring follows nbgrader's rule for a test cell: an error or any output on
stderr (Python- or C-level) scores 0, a numeric result is partial credit, anything else is full marks.

The exercises' independence (tests/notebooks/independence.py) is what makes grading one exercise alone sound.

    python -m tests.notebooks.fastpath JOB.json OUT.json      (what `run_fast_path` starts in a subprocess)
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

CHILD_PARALLELISM = 2      # children run at once (the machines have 2 cores)
MESSAGE_CAP = 2000


@dataclass
class Variant:
    """One thing to grade: `code` replaces exercise `exercise`'s solution cell (None keeps the solution);
    `prelude` runs first, unscored (a grading seed, a forbidden-name guard)."""

    id: str
    exercise: str
    code: str | None = None
    prelude: str = ""


@dataclass
class Outcome:
    """How one test cell scored: status pass|fail|timeout|died, score out of max, and the failure's text."""

    test: str
    score: float
    max: float
    status: str
    message: str = ""
    seconds: float = 0.0


@dataclass
class FastResult:
    """The solution's own test-cell outcomes (from the parent's run) and each variant's outcome."""

    solution: dict[str, Outcome] = field(default_factory=dict)
    variants: dict[str, Outcome] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)   # cells of the solution run that raised
    seconds: float = 0.0


# ----- the caller's side: build the job from an nbgrader source notebook and run it in a subprocess -----------
def job_cells(source_nb) -> list[dict]:
    """The cells as the worker needs them: kind, source (solution markers removed), grade_id, role, points."""
    from autograder.nbgrader_course import solution_body

    cells = []
    for cell in source_nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        role = "solution" if meta.get("solution") else "test" if meta.get("grade") else "code"
        source = solution_body(cell.source) if role == "solution" else cell.source
        cells.append({"kind": cell.cell_type, "source": source, "grade_id": meta.get("grade_id"), "role": role,
                      "points": float(meta.get("points", 0) or 0)})
    return cells


def run_fast_path(source_nb, variants: list[Variant], data_dir: Path | None = None, *,
                  cell_timeout_s: float = 90.0, budget_s: float = 600.0) -> FastResult:
    """Run the solution notebook once and grade every variant by forking before its exercise (see module doc).

    Raises RuntimeError with the worker's output when the worker fails or overruns `budget_s` (a harness problem,
    never a variant's: a variant's own crash or hang is its outcome)."""
    cells = job_cells(source_nb)
    tests = {c["grade_id"] for c in cells if c["role"] == "test"}
    solutions = {c["grade_id"] for c in cells if c["role"] == "solution"}
    for v in variants:
        if v.exercise not in solutions or f"{v.exercise}_test" not in tests:
            raise ValueError(f"variant {v.id!r}: exercise {v.exercise!r} needs a solution cell and a test cell "
                             f"{v.exercise + '_test'!r}; the notebook has solution cells {sorted(solutions)}")
    work = Path(tempfile.mkdtemp(prefix="fastpath-"))
    try:
        run_dir = work / "run"
        run_dir.mkdir()
        if data_dir is not None and Path(data_dir).is_dir():
            shutil.copytree(data_dir, run_dir / Path(data_dir).name)
        job = {"cells": cells, "variants": [v.__dict__ for v in variants], "cell_timeout_s": cell_timeout_s}
        (work / "job.json").write_text(json.dumps(job))
        env = dict(os.environ, PYTHONHASHSEED="0", PLOTLY_RENDERER="json", BROWSER="true",
                   PYDEVD_DISABLE_FILE_VALIDATION="1", MPLBACKEND="Agg")
        repo = Path(__file__).resolve().parents[2]
        env["PYTHONPATH"] = os.pathsep.join([str(repo), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        proc = subprocess.Popen([sys.executable, "-m", "tests.notebooks.fastpath", str(work / "job.json"),
                                 str(work / "out.json")], cwd=run_dir, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            log, _ = proc.communicate(timeout=budget_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            log, _ = proc.communicate()
            raise RuntimeError(f"the fast path ran past its budget of {budget_s:.0f} s\n{log[-3000:]}") from None
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever the notebook or a variant left running
        except ProcessLookupError:
            pass
        out = work / "out.json"
        if proc.returncode != 0 or not out.is_file():
            raise RuntimeError(f"the fast-path worker failed (exit {proc.returncode})\n{log[-3000:]}")
        data = json.loads(out.read_text())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return FastResult(solution={k: Outcome(**v) for k, v in data["solution"].items()},
                      variants={k: Outcome(**v) for k, v in data["variants"].items()},
                      errors=data["errors"], seconds=data["seconds"])


# ----- the worker: runs inside the subprocess ---------------------------------------------------------------
class _Capture:
    """Collects what one cell writes to stdout/stderr, at the Python level and at file descriptors 1 and 2."""

    def __enter__(self):
        import io

        self._saved_py = sys.stdout, sys.stderr
        self.out, self.err = io.StringIO(), io.StringIO()
        sys.stdout, sys.stderr = self.out, self.err
        self._files, self._saved_fd = [], []
        for fd in (1, 2):
            tmp = tempfile.TemporaryFile()
            self._saved_fd.append(os.dup(fd))
            os.dup2(tmp.fileno(), fd)
            self._files.append(tmp)
        return self

    def __exit__(self, *exc):
        sys.stdout, sys.stderr = self._saved_py
        self.fd_text = []
        for fd, saved, tmp in zip((1, 2), self._saved_fd, self._files):
            os.dup2(saved, fd)
            os.close(saved)
            tmp.seek(0)
            self.fd_text.append(tmp.read().decode("utf-8", "replace"))
            tmp.close()
        return False

    @property
    def stderr(self) -> str:
        return self.err.getvalue() + self.fd_text[1]


class _Timeout(BaseException):
    """Raised in a cell that ran past its time limit (a BaseException, so `except Exception` cannot swallow it)."""


def _run_cell(shell, source: str, timeout_s: float) -> dict:
    """Run one cell; return {'error': text or '', 'stderr': text, 'result': value, 'seconds': s, 'timeout': bool}."""
    def on_alarm(signum, frame):
        raise _Timeout(f"the cell ran past its time limit of {timeout_s:.0f} s")

    start = time.monotonic()
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    timed_out = False
    try:
        with _Capture() as cap:
            res = shell.run_cell(source, store_history=True)
    except _Timeout:
        timed_out, res = True, None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    error = ""
    if timed_out or (res is not None and isinstance(res.error_in_exec, _Timeout)):
        timed_out, error = True, f"the cell ran past its time limit of {timeout_s:.0f} s"
    elif res is not None and not res.success:
        err = res.error_in_exec or res.error_before_exec
        error = f"{type(err).__name__}: {err}"
    return {"error": error, "stderr": cap.stderr if not timed_out else "", "timeout": timed_out,
            "result": None if res is None else res.result, "seconds": time.monotonic() - start}


def _score(cell: dict, ran: dict) -> dict:
    """nbgrader's rule for a test cell: error or stderr -> 0; a numeric result -> partial; else full marks."""
    top = cell["points"]
    if ran["timeout"]:
        return {"test": cell["grade_id"], "score": 0.0, "max": top, "status": "timeout", "message": ran["error"]}
    if ran["error"]:
        return {"test": cell["grade_id"], "score": 0.0, "max": top, "status": "fail",
                "message": ran["error"][:MESSAGE_CAP]}
    if ran["stderr"].strip():
        return {"test": cell["grade_id"], "score": 0.0, "max": top, "status": "fail",
                "message": "the test wrote to stderr (nbgrader scores that 0): " + ran["stderr"][:MESSAGE_CAP]}
    if ran["result"] is not None:  # nbgrader reads a cell's result (its text/plain) as partial credit
        try:
            grade = float(repr(ran["result"]))
        except ValueError:
            grade = top
        if grade > top:
            return {"test": cell["grade_id"], "score": 0.0, "max": top, "status": "fail",
                    "message": f"partial credit {grade} is more than the cell's {top} points"}
        grade = grade if grade >= 0.0 else top
        return {"test": cell["grade_id"], "score": grade, "max": top, "status": "pass" if grade == top else "fail",
                "message": "" if grade == top else f"partial credit {grade}"}
    return {"test": cell["grade_id"], "score": top, "max": top, "status": "pass", "message": ""}


def _after_fork() -> None:
    """Make the child safe to compute in: a forked process must not use thread pools whose threads it lacks."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)   # torch's intra-op pool hangs in a forked child otherwise


def _child(shell, cells: list[dict], start: int, variant: dict, timeout_s: float, write_fd: int) -> None:
    """In the forked child: run the variant in place of cell `start`, then the cells up to its exercise's test."""
    _after_fork()
    test_id = f"{variant['exercise']}_test"
    outcome = {"test": test_id, "score": 0.0, "max": 0.0, "status": "fail", "message": "test cell not reached"}
    began = time.monotonic()
    try:
        if variant.get("prelude"):
            _run_cell(shell, variant["prelude"], timeout_s)
        code = variant["code"] if variant.get("code") is not None else cells[start]["source"]
        _run_cell(shell, code, timeout_s)
        for cell in cells[start + 1:]:
            if cell["kind"] != "code" or not cell["source"].strip():
                continue
            ran = _run_cell(shell, cell["source"], timeout_s)
            if cell["grade_id"] == test_id:
                outcome = _score(cell, ran)
                break
        else:
            outcome["message"] = f"no test cell {test_id!r} after the exercise's solution cell"
    except BaseException as err:  # noqa: BLE001 (whatever happens, the parent gets an answer)
        outcome["message"] = f"the fast path failed in the child: {type(err).__name__}: {err}"
    outcome["seconds"] = round(time.monotonic() - began, 3)
    os.write(write_fd, json.dumps(outcome).encode())
    os.close(write_fd)
    os._exit(0)


def _spawn(shell, cells, start, variant, timeout_s):
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _child(shell, cells, start, variant, timeout_s, write_fd)
    os.close(write_fd)
    return pid, read_fd, time.monotonic()


def _reap(pid: int, read_fd: int, started: float, variant: dict, budget_s: float, cells: list[dict]) -> dict:
    """Wait for one child (killing it past `budget_s`) and turn what it sent, or how it died, into an outcome."""
    test_id = f"{variant['exercise']}_test"
    top = next(c["points"] for c in cells if c["grade_id"] == test_id)
    chunks = []
    os.set_blocking(read_fd, False)
    status = None
    while status is None:
        try:
            while True:
                piece = os.read(read_fd, 65536)
                if not piece:
                    break
                chunks.append(piece)
        except BlockingIOError:
            pass
        done, code = os.waitpid(pid, os.WNOHANG)
        if done:
            status = code
        elif time.monotonic() - started > budget_s:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read_fd)
            return {"test": test_id, "score": 0.0, "max": top, "status": "timeout",
                    "message": f"the variant ran past {budget_s:.0f} s", "seconds": round(budget_s, 3)}
        else:
            time.sleep(0.005)
    os.set_blocking(read_fd, True)
    rest = os.read(read_fd, 1 << 20)
    while rest:
        chunks.append(rest)
        rest = os.read(read_fd, 1 << 20)
    os.close(read_fd)
    raw = b"".join(chunks)
    if raw:
        out = json.loads(raw)
        out["max"] = top
        return out
    how = (f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit code {os.WEXITSTATUS(status)}")
    return {"test": test_id, "score": 0.0, "max": top, "status": "died",
            "message": f"the kernel died ({how})", "seconds": round(time.monotonic() - started, 3)}


def worker(job_path: Path, out_path: Path) -> None:
    """Run the job: the solution notebook in this process, each variant in a child forked before its exercise."""
    from ipykernel.inprocess.manager import InProcessKernelManager

    job = json.loads(Path(job_path).read_text())
    cells, timeout_s = job["cells"], float(job["cell_timeout_s"])
    by_exercise: dict[str, list[dict]] = {}
    for v in job["variants"]:
        by_exercise.setdefault(v["exercise"], []).append(v)
    km = InProcessKernelManager()
    km.start_kernel()
    shell = km.kernel.shell
    began = time.monotonic()
    result = {"solution": {}, "variants": {}, "errors": [], "seconds": 0.0}
    for index, cell in enumerate(cells):
        if cell["kind"] != "code" or not cell["source"].strip():
            continue
        pending = list(by_exercise.get(cell["grade_id"], [])) if cell["role"] == "solution" else []
        # children of this exercise may need as long as the cells up to its test: budget them generously
        budget = timeout_s * (1 + sum(1 for c in cells[index:] if c["kind"] == "code"
                                      and c["grade_id"] != f"{cell['grade_id']}_test"))
        running: list[tuple] = []
        while pending or running:
            while pending and len(running) < CHILD_PARALLELISM:
                variant = pending.pop(0)
                running.append((variant, *_spawn(shell, cells, index, variant, timeout_s)))
            variant, pid, read_fd, started = running.pop(0)
            result["variants"][variant["id"]] = _reap(pid, read_fd, started, variant, budget, cells)
        ran = _run_cell(shell, cell["source"], timeout_s)
        if ran["error"]:
            result["errors"].append(f"{cell['grade_id'] or f'cell {index}'}: {ran['error'][:MESSAGE_CAP]}")
        if cell["role"] == "test":
            result["solution"][cell["grade_id"]] = dict(_score(cell, ran), seconds=round(ran["seconds"], 3))
    result["seconds"] = time.monotonic() - began
    for outcome in [*result["solution"].values(), *result["variants"].values()]:
        outcome.setdefault("seconds", 0.0)
    Path(out_path).write_text(json.dumps(result))
    sys.stdout.flush()
    os._exit(0)  # skip atexit hooks of what the notebook started (servers, kernels)


if __name__ == "__main__":
    worker(Path(sys.argv[1]), Path(sys.argv[2]))
