"""Drive nbgrader in a throw-away course root: generate an assignment, place submissions, autograde, read scores.

Reused by the release tool, the notebook tests and the hardened grader. Every nbgrader command runs as a
subprocess with the venv's bin/ on PATH (nbgrader calls `alembic`) and an isolated Jupyter config dir, and is
killed (with its whole process group) when it overruns its wall budget, failing loudly.
"""
from __future__ import annotations

import copy
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat

CONFIG_FILE = Path(__file__).with_name("nbgrader_config.py")
NBGRADER_STARTUP_S = 180.0  # bound on one nbgrader command's start-up + database work (about 5 s idle; 60 s was overrun at load 12)
BEGIN_SOLUTION, END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"


class NbgraderFailed(RuntimeError):
    """An nbgrader command failed or overran its wall budget; the message carries its output's tail."""


def make_course_root(root: Path, unit: str, source_nb: nbformat.NotebookNode,
                     data_dir: Path | None = None, gradebook: Path | None = None) -> Path:
    """Lay out an nbgrader course root at `root`: config, source/<unit>/<unit>.ipynb and the unit's data files
    (and a copy of `gradebook`, an empty one from `empty_gradebook`, when given)."""
    root = Path(root)
    if gradebook is not None:
        root.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(gradebook, root / "gradebook.db")
    src = root / "source" / unit
    src.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(CONFIG_FILE, root / "nbgrader_config.py")
    (root / ".jupyter").mkdir(exist_ok=True)
    nbformat.write(source_nb, src / f"{unit}.ipynb")
    if data_dir is not None and Path(data_dir).is_dir():
        shutil.copytree(data_dir, src / Path(data_dir).name, dirs_exist_ok=True)
    return root


def _env(root: Path) -> dict[str, str]:
    """The environment for an nbgrader subprocess: venv bin/ first on PATH, Jupyter config isolated in root."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["JUPYTER_CONFIG_DIR"] = str(Path(root) / ".jupyter")
    env.setdefault("PYTHONHASHSEED", "0")
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    return env


def run_nbgrader(root: Path, *args: str, timeout_s: float = NBGRADER_STARTUP_S, check: bool = True,
                 env: dict[str, str] | None = None) -> str:
    """Run `nbgrader <args>` in course root `root` and return its output.

    Raises NbgraderFailed when it overruns `timeout_s` (killed with its process group) and, if `check`, when it
    exits non-zero or logs an ERROR line. `env` adds variables to the command's environment (and its kernels').
    """
    cmd = [sys.executable, "-m", "nbgrader", *args, f"--CourseDirectory.root={root}"]
    return _run(cmd, root, f"nbgrader {' '.join(args)}", timeout_s, check, env)


def _run(cmd: list[str], root: Path, what: str, timeout_s: float, check: bool, env: dict[str, str] | None) -> str:
    """Run one nbgrader process in `root` under a wall budget (see run_nbgrader). Its output goes to a file, not a
    pipe: the process is done when it exits, whatever its kernels' descendants still hold open."""
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(cmd, cwd=root, env={**_env(root), **(env or {})}, stdout=log,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            proc.wait(timeout=timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            timed_out = True
        log.seek(0)
        out = log.read()
    if timed_out:
        raise NbgraderFailed(f"`{what}` ran past its wall budget of {timeout_s:.0f} s and was "
                             f"killed (a hung cell? see jupyter/nbclient#312).\n--- output tail ---\n{out[-4000:]}")
    if check and (proc.returncode != 0 or re.search(r"\| ERROR\]", out or "")):
        raise NbgraderFailed(f"`{what}` failed (exit {proc.returncode}).\n"
                             f"--- output tail ---\n{out[-4000:]}")
    return out


def generate_assignment(root: Path, unit: str, *, with_db: bool = True) -> Path:
    """Run generate_assignment for `unit` (recording its cells in the gradebook); return the release notebook."""
    args = ["generate_assignment", unit, "--force", "--log-level=WARN"]
    if not with_db:
        args.append("--no-db")
    run_nbgrader(root, *args)
    return Path(root) / "release" / unit / f"{unit}.ipynb"


def solution_body(source: str) -> str:
    """The code a correct student would write: a solution cell's source with the BEGIN/END SOLUTION lines removed."""
    return "\n".join(line for line in source.splitlines()
                     if line.strip() not in (BEGIN_SOLUTION, END_SOLUTION))


def make_submission(release_nb: nbformat.NotebookNode, source_nb: nbformat.NotebookNode,
                    overrides: dict[str, str] | None = None, fill: bool = True) -> nbformat.NotebookNode:
    """A student's notebook: the release with every solution cell filled from the source (if `fill`),
    except the grade_ids in `overrides`, whose cells get the given code instead."""
    overrides = dict(overrides or {})
    solutions = {c.metadata["nbgrader"]["grade_id"]: c.source for c in source_nb.cells
                 if c.metadata.get("nbgrader", {}).get("solution")}
    unknown = set(overrides) - set(solutions)
    if unknown:
        raise KeyError(f"no solution cell with grade_id {sorted(unknown)}; solution cells are {sorted(solutions)}")
    nb = copy.deepcopy(release_nb)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        gid = meta.get("grade_id")
        if not meta.get("solution"):
            continue
        if gid in overrides:
            cell.source = overrides.pop(gid)
        elif fill and gid in solutions:
            cell.source = solution_body(solutions[gid])
    return nb


def place_submission(root: Path, unit: str, student: str, nb: nbformat.NotebookNode) -> Path:
    """Put one student's notebook where nbgrader autograde looks for it: submitted/<student>/<unit>/<unit>.ipynb."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", student):
        raise ValueError(f"student id {student!r} must use letters, digits, '_', '-', '.' only")
    path = Path(root) / "submitted" / student / unit / f"{unit}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def autograde(root: Path, unit: str, n_students: int, *, cell_timeout_s: int = 120,
              notebook_budget_s: float = 180.0, env: dict[str, str] | None = None) -> str:
    """Autograde every placed submission of `unit` in ONE nbgrader command (one start-up for all students).

    Each cell may run `cell_timeout_s`; the whole command must finish within start-up + n_students x
    `notebook_budget_s`, else it is killed and NbgraderFailed says so. A submission nbgrader could not grade
    does not raise (the others are still graded): compare `read_scores` with the students you placed; the
    returned output says why.
    """
    budget = NBGRADER_STARTUP_S + n_students * notebook_budget_s
    return run_nbgrader(root, "autograde", unit, "--force", "--log-level=WARN",
                        f"--Execute.timeout={int(cell_timeout_s)}", timeout_s=budget, check=False, env=env)


def generate_and_autograde(root: Path, unit: str, n_students: int, *, cell_timeout_s: int = 120,
                           notebook_budget_s: float = 180.0, env: dict[str, str] | None = None) -> str:
    """`generate_assignment` (into the gradebook) then `autograde` of every placed submission, in ONE process.

    The same nbgrader code the two commands run (its API, with this root's nbgrader_config.py), without a second
    start-up: importing nbgrader's apps costs about 4 s. Budgets and failures as `autograde`; a failed
    generate_assignment raises NbgraderFailed.
    """
    budget = 2 * NBGRADER_STARTUP_S + n_students * notebook_budget_s
    cmd = [sys.executable, str(Path(__file__).resolve()), str(root), unit, str(int(cell_timeout_s))]  # no PYTHONPATH: kernels inherit it
    return _run(cmd, root, f"generate_assignment + autograde {unit}", budget, False, env)


def empty_gradebook(folder: Path) -> Path:
    """An empty gradebook with nbgrader's schema, made once per folder: nbgrader asks a separate `alembic`
    process for the schema's version whenever it creates a gradebook (about 3 s); a copy of this one skips that."""
    path = Path(folder) / "empty-gradebook.db"
    if not path.is_file():
        # one part file per process and thread: two threads (or pytest workers) may make the first one at once
        part = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.part")
        code = "import sys; from nbgrader.api import Gradebook; Gradebook('sqlite:///' + sys.argv[1]).close()"
        subprocess.run([sys.executable, "-c", code, str(part)], check=True, env=_env(Path(folder)),
                       capture_output=True, timeout=NBGRADER_STARTUP_S)
        part.replace(path)
    return path


def read_scores(root: Path, unit: str) -> dict[str, dict[str, tuple[float, float]]]:
    """Per-cell autograded scores from the gradebook: {student: {grade_id: (score, max_score)}}."""
    from nbgrader.api import Gradebook

    scores: dict[str, dict[str, tuple[float, float]]] = {}
    with Gradebook(f"sqlite:///{Path(root) / 'gradebook.db'}") as gb:
        for student in gb.students:
            try:
                sub = gb.find_submission_notebook(unit, unit, student.id)
            except Exception:  # this student has no autograded submission
                continue
            scores[student.id] = {g.name: (float(g.score), float(g.max_score)) for g in sub.grades
                                  if g.cell.cell_type == "code"}
    return scores


def autograded_notebook(root: Path, unit: str, student: str) -> nbformat.NotebookNode:
    """The executed notebook nbgrader wrote for a student (outputs included)."""
    return nbformat.read(Path(root) / "autograded" / student / unit / f"{unit}.ipynb", as_version=4)


def stalled_cells(nb: nbformat.NotebookNode, threshold_s: float = 5.0) -> list[tuple[int, float]]:
    """Cells whose execute_reply came `threshold_s` or more after the kernel went idle (the nbclient#312 stall)."""
    from datetime import datetime

    def ts(value: str) -> float:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()

    stalls = []
    for i, cell in enumerate(nb.cells):
        ex = cell.get("metadata", {}).get("execution", {})
        if "iopub.status.idle" in ex and "shell.execute_reply" in ex:
            gap = ts(ex["shell.execute_reply"]) - ts(ex["iopub.status.idle"])
            if gap >= threshold_s:
                stalls.append((i, gap))
    return stalls


def timed(fn, *args, **kwargs):
    """(result, seconds) of fn(*args, **kwargs): for reporting where a test's time goes."""
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def _generate_and_autograde(root: Path, unit: str, cell_timeout_s: int) -> int:
    """The process `generate_and_autograde` starts: both steps through nbgrader's API; prints their logs."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader(CONFIG_FILE.name, path=str(root)).load_config()  # installs the #312 guard too
    config.CourseDirectory.root = str(root)
    config.Execute.timeout = int(cell_timeout_s)
    api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config, log_level="WARN")
    for step, run in (("generate_assignment", lambda: api.generate_assignment(unit, force=True)),
                      ("autograde", lambda: api.autograde(unit, "*", force=True))):
        result = run()
        print(result.get("log", ""), end="")
        if not result["success"]:
            print(f"[ERROR] {step} failed:\n{result.get('error', '')}")
            if step == "generate_assignment":
                return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(_generate_and_autograde(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])))
