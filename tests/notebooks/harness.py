"""Grade a unit's solution, its unmodified release and every stored wrong answer in ONE nbgrader autograde run,
and read what a test needs from the sources: exercises, visible/hidden test lines, secret lines.

A unit here is (name, solutions dir, course dir), so the same code checks the real units and the fixture.
"""
from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder import nbgrader_course as nc
from autograder import release

CELL_TIMEOUT_S = 90         # one cell; the whole notebook must run in < 60 s
NOTEBOOK_BUDGET_S = 150.0   # wall budget per notebook inside the one autograde command
STALL_S = 5.0               # an execute_reply this late after idle is the jupyter/nbclient#312 stall
MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
TRIVIAL = re.compile(r"^(#.*|pass|else:|try:|finally:|return|continue|break|[\])}]+,?|\"\"\"|'''|)$")


@dataclass(frozen=True)
class Unit:
    """Where a unit's source and release live."""

    name: str
    solutions: Path
    course: Path

    @property
    def source_file(self) -> Path:
        return self.solutions / self.name / f"{self.name}.py"

    @property
    def release_file(self) -> Path:
        return self.course / self.name / f"{self.name}.ipynb"

    def wrong_answers(self) -> dict[str, tuple[str, Path]]:
        """{student id: (exercise grade_id, file)} for solutions/<U>/wrong/<ex>__<slug>.py."""
        out = {}
        for p in sorted((self.solutions / self.name / "wrong").glob("*.py")):
            ex, sep, slug = p.stem.partition("__")
            if not sep or not slug:
                raise ValueError(f"{p}: wrong answers are named <exercise>__<slug>.py")
            out[f"wrong_{ex}__{slug}"] = (ex, p)
        return out


@dataclass
class Graded:
    """The outcome of grading a unit: per-student per-cell scores and per-notebook diagnostics."""

    scores: dict[str, dict[str, tuple[float, float]]]
    errors: dict[str, list[str]] = field(default_factory=dict)   # student -> cells that raised
    stalls: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)     # student -> kernel execution time
    root: Path | None = None


def secret_and_public_lines(source_nb) -> tuple[set[str], set[str], set[str]]:
    """(solution lines, hidden-test lines, public lines) of a source notebook, stripped, trivial ones dropped."""
    sol, hidden, public = set(), set(), set()
    for cell in source_nb.cells:
        bucket = public
        for raw in cell.source.splitlines():
            line = raw.strip()
            if line.startswith("### BEGIN SOLUTION"):
                bucket = sol
            elif line.startswith("### BEGIN HIDDEN TESTS"):
                bucket = hidden
            elif line.startswith("### END"):
                bucket = public
            elif not TRIVIAL.match(line) and len(line) >= 8:
                bucket.add(line)
    return sol - public, hidden - public, public


def course_lines(course_dir: Path) -> dict[str, set[str]]:
    """Every stripped line of every text file under course/ (notebook cells and outputs included), by file."""
    out: dict[str, set[str]] = {}
    for p in sorted(Path(course_dir).rglob("*")):
        if not p.is_file():
            continue
        try:
            text = p.read_text()
        except UnicodeDecodeError:
            continue
        if p.suffix == ".ipynb":
            nb = json.loads(text)
            parts = []
            for cell in nb.get("cells", []):
                parts.append("".join(cell.get("source", "")))
                for o in cell.get("outputs", []):
                    parts.append("".join(o.get("text", "")) + json.dumps(o.get("data", {})))
            text = "\n".join(parts) + "\n" + text
        out[str(p)] = {ln.strip() for ln in text.splitlines()}
    return out


def exercises(source_nb) -> dict[str, dict]:
    """{exercise grade_id: {"test": test cell or None, "points": n, "visible": [...], "hidden": [...]}}."""
    out: dict[str, dict] = {}
    tests = {}
    for cell in source_nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            out[meta["grade_id"]] = {"test": None}
        elif meta.get("grade"):
            tests[meta["grade_id"]] = cell
    for gid, cell in tests.items():
        ex = gid.removesuffix("_test")
        visible, hidden, bucket = [], [], None
        for raw in cell.source.splitlines():
            line = raw.strip()
            if line.startswith("### BEGIN HIDDEN TESTS"):
                bucket = hidden
            elif line.startswith("### END HIDDEN TESTS"):
                bucket = None
            elif line and not line.startswith("#"):
                (bucket if bucket is not None else visible).append(line)
        out.setdefault(ex, {"test": None, "orphan_test": True})
        out[ex].update(test=gid, points=cell.metadata["nbgrader"]["points"], visible=visible, hidden=hidden)
    return out


def _cell_errors(nb) -> list[str]:
    errs = []
    for i, cell in enumerate(nb.cells):
        for o in cell.get("outputs", []):
            if o.get("output_type") == "error":
                gid = cell.metadata.get("nbgrader", {}).get("grade_id", f"cell {i}")
                errs.append(f"{gid}: {o.get('ename')}: {o.get('evalue', '')[:300]}")
    return errs


def _kernel_seconds(nb) -> float:
    from datetime import datetime

    stamps = [c.metadata.get("execution", {}) for c in nb.cells]
    start = [s["iopub.status.busy"] for s in stamps if "iopub.status.busy" in s]
    end = [s["iopub.status.idle"] for s in stamps if "iopub.status.idle" in s]
    if not start or not end:
        return 0.0
    parse = lambda v: datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp()  # noqa: E731
    return parse(max(end)) - parse(min(start))


_CACHE: dict[Unit, Graded | Exception] = {}


def grade_unit(unit: Unit) -> Graded:
    """Autograde solution, release and every wrong answer of `unit` in one nbgrader command (cached per process,
    failures included, so a broken unit costs one run, not one per test)."""
    if unit not in _CACHE:
        try:
            _CACHE[unit] = _grade_unit(unit)
        except Exception as err:  # remembered and re-raised by every test that needs it
            _CACHE[unit] = err
    result = _CACHE[unit]
    if isinstance(result, Exception):
        raise result
    return result


def _grade_unit(unit: Unit) -> Graded:
    source_nb = release.build_source_notebook(unit.name, unit.solutions)
    release_nb = nbformat.read(unit.release_file, as_version=4)
    subs = {"solution": nc.make_submission(release_nb, source_nb), "release": release_nb}
    for student, (ex, path) in unit.wrong_answers().items():
        subs[student] = nc.make_submission(release_nb, source_nb, {ex: path.read_text()})
    root = Path(tempfile.mkdtemp(prefix=f"grade-{unit.name}-"))
    nc.make_course_root(root, unit.name, source_nb, release.data_dir(unit.name, unit.solutions))
    nc.generate_assignment(root, unit.name)
    for student, nb in subs.items():
        nc.place_submission(root, unit.name, student, nb)
    nc.autograde(root, unit.name, len(subs), cell_timeout_s=CELL_TIMEOUT_S, notebook_budget_s=NOTEBOOK_BUDGET_S)
    graded = Graded(scores=nc.read_scores(root, unit.name), root=root)
    for student in subs:
        try:
            nb = nc.autograded_notebook(root, unit.name, student)
        except FileNotFoundError:
            continue
        graded.errors[student] = _cell_errors(nb)
        graded.stalls[student] = nc.stalled_cells(nb, STALL_S)
        graded.seconds[student] = _kernel_seconds(nb)
    return graded
