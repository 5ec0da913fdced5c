"""The fast path: grade many variants of one exercise without running the whole notebook once per variant.

The solution notebook runs once, top to bottom, in one Python process (an in-process IPython kernel, so magics,
`display` and widgets behave as in a notebook). Just before an exercise's solution cell the process forks once per
variant to grade (a stored wrong answer, a mutant, a grading seed). The child runs the variant's code in place of
the solution cell, then every code cell after it up to and including the exercise's test cell, exactly as the
notebook would run them, and reports how that test cell scored; the parent carries on with the solution.

A variant therefore costs the cells between its exercise and its test, not the notebook, and a variant that hangs,
crashes or corrupts memory takes only its own child with it. Grading a variant under many grading seeds forks
again at its test cell, once per seed. The state a test sees is the state at its own place
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

MESSAGE_CAP = 2000


@dataclass
class Variant:
    """One thing to grade: `code` replaces exercise `exercise`'s solution cell (None keeps the solution);
    `prelude` runs first, unscored. With `seeds`, the test is graded once per grading seed (INFOPT_GRADING_SEED),
    each in its own fork, and the outcomes are named "<id>@seed<n>"; the visible part of the test runs once when
    it can, since it draws no grading randomness."""

    id: str
    exercise: str
    code: str | None = None
    prelude: str = ""
    seeds: tuple[int, ...] = ()


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


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies, even by SIGKILL or a CI timeout that skips cleanup:
    a killed test run must not leave a fast-path worker or its forks computing for half an hour (seen)."""
    parent = os.getppid()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return  # not Linux: the caller's own cleanup still runs in the normal case
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def _after_fork() -> None:
    """Make the child safe to compute in: it dies with its parent, and uses no thread pool whose threads it lacks."""
    die_with_parent()
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)   # torch's intra-op pool hangs in a forked child otherwise


def _forked(task, budget_s: float) -> dict:
    """Run `task()` (returning a JSON-able dict) in a forked child; its dict, or {'died'|'timeout': text}."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _after_fork()
        try:
            out = task()
        except BaseException as err:  # noqa: BLE001 (whatever happens, the parent gets an answer)
            out = {"harness_error": f"{type(err).__name__}: {err}"}
        os.write(write_fd, json.dumps(out).encode())
        os.close(write_fd)
        os._exit(0)
    os.close(write_fd)
    return _reap(pid, read_fd, time.monotonic(), budget_s)


def _reap(pid: int, read_fd: int, started: float, budget_s: float) -> dict:
    """Wait for one child (killing it past `budget_s`), reading what it sends; say how it ended if it sent nothing."""
    chunks = []
    os.set_blocking(read_fd, False)
    status = None
    while status is None:
        try:
            while piece := os.read(read_fd, 65536):
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
            return {"timeout": f"the variant ran past {budget_s:.0f} s"}
        else:
            time.sleep(0.005)
    os.set_blocking(read_fd, True)
    while rest := os.read(read_fd, 1 << 20):
        chunks.append(rest)
    os.close(read_fd)
    raw = b"".join(chunks)
    if raw:
        return json.loads(raw)
    how = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit code {os.WEXITSTATUS(status)}"
    return {"died": f"the kernel died ({how})"}


def _split_test(source: str) -> tuple[str, str] | None:
    """(visible part, hidden part) of a test cell when each runs alone and the visible part draws no grading
    randomness: then a wrong answer the visible tests reject is rejected under every seed, and only the hidden
    part needs one run per seed."""
    marker = "### BEGIN HIDDEN TESTS"
    if marker not in source:
        return None
    at = source.index(marker)
    visible, hidden = source[:at], source[at:]
    if "grading_rng" in visible or "default_rng()" in visible:
        return None
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        for part in (visible, hidden):
            compile(TransformerManager().transform_cell(part), "<test>", "exec")
    except SyntaxError:
        return None
    return visible, hidden


def _merge(first: dict, then: dict) -> dict:
    """One cell's outcome from two parts run one after the other."""
    return {"error": then["error"], "stderr": first["stderr"] + then["stderr"], "timeout": then["timeout"],
            "result": then["result"], "seconds": first["seconds"] + then["seconds"]}


def _seed_code(seed: int) -> str:
    return f"import os as _os\n_os.environ['INFOPT_GRADING_SEED'] = '{seed}'\ndel _os"


def _grade_test(shell, cell: dict, seeds: list[int], timeout_s: float) -> dict:
    """{seed or 0: outcome} of one test cell: once (no seeds), or once per seed, each in its own fork."""
    if not seeds:
        return {0: _score(cell, _run_cell(shell, cell["source"], timeout_s))}
    if len(seeds) == 1:  # this runs in the variant's own child already: no fork per seed
        _run_cell(shell, _seed_code(seeds[0]), timeout_s)
        return {seeds[0]: _score(cell, _run_cell(shell, cell["source"], timeout_s))}
    split = _split_test(cell["source"])
    first = None
    if split is not None:
        first = _run_cell(shell, split[0], timeout_s)
        if first["error"] or first["timeout"]:
            return {seed: _score(cell, first) for seed in seeds}
    out = {}
    for seed in seeds:
        def task(seed=seed):
            _run_cell(shell, _seed_code(seed), timeout_s)
            if split is None:
                return _score(cell, _run_cell(shell, cell["source"], timeout_s))
            return _score(cell, _merge(first, _run_cell(shell, split[1], timeout_s)))
        out[seed] = _outcome(_forked(task, 2 * timeout_s), cell)
    return out


def _outcome(reply: dict, cell: dict) -> dict:
    """A child's reply as an outcome: its score, or a zero saying it hung, died or broke the harness."""
    top, test = cell["points"], cell["grade_id"]
    for status in ("timeout", "died"):
        if status in reply:
            return {"test": test, "score": 0.0, "max": top, "status": status, "message": reply[status]}
    if "harness_error" in reply:
        return {"test": test, "score": 0.0, "max": top, "status": "fail",
                "message": "the fast path failed in the child: " + reply["harness_error"]}
    return reply


def _no_traceback(*args, **kwargs) -> None:
    """IPython's showtraceback, in a variant's child: nothing to show (nobody reads the child's output)."""


def _unformatted(exception: BaseException, *args, **kwargs) -> dict:
    """IPython's _format_exception_for_storage, in a variant's child: the error without its traceback."""
    return {"ename": type(exception).__name__, "evalue": str(exception), "traceback": []}


def _variant_task(shell, cells: list[dict], start: int, variant: dict, timeout_s: float):
    """The child's work for one variant: its code in place of cell `start`, the cells up to its exercise's test,
    then the test (per seed). Returns {outcome id: outcome}."""
    test_id = f"{variant['exercise']}_test"
    seeds = list(variant.get("seeds") or [])

    def task() -> dict:
        began = time.monotonic()
        # A variant's score needs only the error's type and message (_run_cell), never IPython's traceback pages,
        # whose formatting (stack_data, pygments, inspect over every module; twice: shown and stored in the
        # history) was most of a failing variant's time.
        shell.showtraceback = _no_traceback
        shell._format_exception_for_storage = _unformatted
        if variant.get("prelude"):
            _run_cell(shell, variant["prelude"], timeout_s)
        code = variant["code"] if variant.get("code") is not None else cells[start]["source"]
        _run_cell(shell, code, timeout_s)
        for cell in cells[start + 1:]:
            if cell["kind"] != "code" or not cell["source"].strip():
                continue
            if cell["grade_id"] == test_id:
                graded = _grade_test(shell, cell, seeds, timeout_s)
                spent = round(time.monotonic() - began, 3)
                return {_variant_id(variant, seed): dict(o, seconds=spent) for seed, o in graded.items()}
            _run_cell(shell, cell["source"], timeout_s)
        return {"harness_error": f"no test cell {test_id!r} after the exercise's solution cell"}
    return task


def _variant_id(variant: dict, seed: int) -> str:
    return f"{variant['id']}@seed{seed}" if seed else variant["id"]


def grade_at(shell, cells: list[dict], index: int, pending: list[dict], timeout_s: float) -> dict[str, dict]:
    """Grade `pending` variants of the exercise whose solution cell is `cells[index]`, from this process's state just
    before that cell: each in its own forked child. Returns {outcome id: outcome}."""
    cell = cells[index]
    test_cell = next(c for c in cells if c["grade_id"] == f"{cell['grade_id']}_test")
    # children of this exercise may need as long as the cells up to its test: budget them generously
    budget = timeout_s * (1 + sum(1 for c in cells[index:] if c["kind"] == "code"
                                  and c["grade_id"] != f"{cell['grade_id']}_test"))
    out: dict[str, dict] = {}
    for variant in pending:
        reply = _forked(_variant_task(shell, cells, index, variant, timeout_s),
                        budget * (1 + len(variant.get("seeds") or [])))
        ids = [_variant_id(variant, seed) for seed in (variant.get("seeds") or [0])]
        if set(ids) <= set(reply):
            out.update({vid: reply[vid] for vid in ids})
        else:
            failed = _outcome(reply, test_cell)
            out.update({vid: dict(failed, seconds=0.0) for vid in ids})
    return out


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
        if pending:
            result["variants"].update(grade_at(shell, cells, index, pending, timeout_s))
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
    die_with_parent()
    worker(Path(sys.argv[1]), Path(sys.argv[2]))
