"""Grade a unit the way the notebook tests need, and read what a test needs from the sources: exercises,
visible/hidden test lines, secret lines.

Grading a unit is two runs. (1) ONE nbgrader autograde command for the solution, the unmodified release and the
stored wrong answers the unit's manifest names (at least one; all of them for `full_grading` units): the real
path, end to end. (2) The fast path (tests/notebooks/fastpath.py) for every stored wrong answer: the solution
notebook runs once and each wrong answer is graded on its own exercise, forked from the notebook's state there.
The wrong answers graded both ways prove the fast path equals nbgrader; the independence check
(tests/notebooks/independence.py) proves the exercises may be graded alone.

A unit here is (name, solutions dir, course dir), so the same code checks the real units and the fixture.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder import nbgrader_course as nc
from autograder import release
from tests.notebooks.fastpath import FastResult, Variant, run_fast_path
from tests.notebooks.independence import independence_problems
from tests.notebooks.manifest import Manifest, load_manifest
from tests.notebooks.rules import caught_problems, load_rules, table_problems

# One cell may run CELL_TIMEOUT_S. Each notebook gets a wall budget inside the one autograde command of
# BUDGET_FACTOR x its manifest's `notebook_s` (the margin absorbs a loaded CI box).
CELL_TIMEOUT_S = int(os.environ.get("INFOPT_CELL_TIMEOUT_S", 90))
BUDGET_FACTOR = float(os.environ.get("INFOPT_NOTEBOOK_BUDGET_FACTOR", 2.5))
# Every wrong answer is graded under grading seeds 1..SEEDS. `make test` uses 3 to stay in its budget (20 for every
# stored wrong answer of six units took past 40 minutes on 2 cores); INFOPT_GRADING_SEEDS=20 is the full proof.
SEEDS = int(os.environ.get("INFOPT_GRADING_SEEDS", 3))
# Units (comma-separated, or "all") whose every stored wrong answer also goes through full nbgrader, whatever their
# manifest says: the slow, complete proof that the fast path scores as nbgrader does (minutes per unit).
FULL_GRADING = {u.strip() for u in os.environ.get("INFOPT_FULL_GRADING", "").split(",") if u.strip()}

STALL_S = 5.0               # an execute_reply this late after idle is the jupyter/nbclient#312 stall
MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
TRIVIAL = re.compile(r"^(#.*|pass|else:|try:|finally:|return|continue|break|[\])}]+,?|\"\"\"|'''|)$")


def full_grading_asked(unit: str) -> bool:
    """True when INFOPT_FULL_GRADING names `unit` or says `all`."""
    return unit in FULL_GRADING or "all" in FULL_GRADING


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

    @property
    def manifest(self) -> Manifest:
        return load_manifest(self.solutions / self.name)

    def nbgrader_students(self) -> list[str]:
        """The stored wrong answers that also go through full nbgrader (the manifest's choice, else the first)."""
        wrong = self.wrong_answers()
        m = self.manifest
        if m.full_grading or full_grading_asked(self.name):
            return list(wrong)
        chosen = [f"wrong_{w}" for w in m.nbgrader_wrong] or list(wrong)[:1]
        unknown = [c for c in chosen if c not in wrong]
        if unknown:
            raise ValueError(f"{m.path}: nbgrader_wrong names {unknown}, which are not stored wrong answers "
                             f"({sorted(wrong)})")
        return chosen

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
    log: str = ""                                                # nbgrader's output (tail), for messages
    fast: FastResult | None = None                               # the fast path's outcomes (every wrong answer)
    fast_error: str = ""                                         # why the fast path failed, if it did


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


def seeded(student: str, seed: int) -> str:
    """The fast-path variant id of a wrong answer graded under one grading seed."""
    return f"{student}@seed{seed}"


def fast_outcome(graded: Graded, student: str, seed: int = 1):
    """The fast path's outcome for a wrong answer under one seed (seed 1 stands for "the" fast-path grade)."""
    return None if graded.fast is None else graded.fast.variants.get(seeded(student, seed))


def _grade_unit(unit: Unit) -> Graded:
    source_nb = release.build_source_notebook(unit.name, unit.solutions)
    release_nb = nbformat.read(unit.release_file, as_version=4)
    wrong = unit.wrong_answers()
    subs = {"solution": nc.make_submission(release_nb, source_nb), "release": release_nb}
    for student in unit.nbgrader_students():
        ex, path = wrong[student]
        subs[student] = nc.make_submission(release_nb, source_nb, {ex: path.read_text()})
    root = Path(tempfile.mkdtemp(prefix=f"grade-{unit.name}-"))
    data_dir = release.data_dir(unit.name, unit.solutions)
    nc.make_course_root(root, unit.name, source_nb, data_dir)
    nc.generate_assignment(root, unit.name)
    for student, nb in subs.items():
        nc.place_submission(root, unit.name, student, nb)
    budget = BUDGET_FACTOR * unit.manifest.notebook_s
    log = nc.autograde(root, unit.name, len(subs), cell_timeout_s=CELL_TIMEOUT_S, notebook_budget_s=budget)
    graded = Graded(scores=nc.read_scores(root, unit.name), root=root, log=log[-3000:])
    for student in subs:
        try:
            nb = nc.autograded_notebook(root, unit.name, student)
        except FileNotFoundError:
            continue
        graded.errors[student] = _cell_errors(nb)
        graded.stalls[student] = nc.stalled_cells(nb, STALL_S)
        graded.seconds[student] = _kernel_seconds(nb)
    variants = [Variant(student, ex, path.read_text(), seeds=tuple(range(1, SEEDS + 1)))
                for student, (ex, path) in wrong.items()]
    try:
        graded.fast = run_fast_path(source_nb, variants, data_dir, cell_timeout_s=CELL_TIMEOUT_S,
                                    budget_s=budget + 10 * len(variants) * CELL_TIMEOUT_S)
        graded.seconds["fast path"] = graded.fast.seconds
    except RuntimeError as err:
        graded.fast_error = str(err)
    return graded


def structure_problems(unit: Unit) -> list[str]:
    """(f) Every exercise has one <ex>_test cell with visible and hidden tests, and >= 1 stored wrong answer."""
    exs = exercises(release.build_source_notebook(unit.name, unit.solutions))
    if not exs:
        return ["no graded exercise (a cell with solution=true)"]
    wrong = {ex for ex, _ in unit.wrong_answers().values()}
    problems = []
    for ex, info in sorted(exs.items()):
        if info.get("orphan_test"):
            problems.append(f"test cell {info['test']!r} has no solution cell {ex!r}")
            continue
        if info["test"] is None:
            problems.append(f"exercise {ex!r} has no test cell {ex + '_test'!r}")
        else:
            if not info["visible"]:
                problems.append(f"{info['test']}: no visible test lines before ### BEGIN HIDDEN TESTS")
            if not info["hidden"]:
                problems.append(f"{info['test']}: no hidden tests (### BEGIN/END HIDDEN TESTS)")
        if ex not in wrong:
            problems.append(f"exercise {ex!r} has no stored wrong answer solutions/{unit.name}/wrong/{ex}__<slug>.py")
    problems += [f"a stored wrong answer names exercise {ex!r}, which does not exist" for ex in sorted(wrong - set(exs))]
    return problems


def leaks(unit: Unit) -> list[str]:
    """(d) Marker text anywhere under course/, and this unit's solution or hidden-test lines under course/<U>/.

    (Another unit's release may legitimately show a line such as `total = 0` in its own lesson code, so the
    line comparison is per unit; the markers are checked everywhere.)
    """
    sol, hidden, _ = secret_and_public_lines(release.build_source_notebook(unit.name, unit.solutions))
    own = Path(unit.course) / unit.name
    found = []
    for path, lines in course_lines(unit.course).items():
        text = "\n".join(lines)
        found += [f"{path}: marker {m!r}" for m in MARKERS if m in text]
        if Path(path).is_relative_to(own):
            found += [f"{path}: solution line {ln!r}" for ln in sorted(sol & lines)]
            found += [f"{path}: hidden-test line {ln!r}" for ln in sorted(hidden & lines)]
    return found


def solution_problems(graded: Graded) -> list[str]:
    """(a) Points the solution lost, cells that raised, and nbclient#312 stalls."""
    scores = graded.scores.get("solution")
    if not scores:
        return [f"the solution was not graded; nbgrader said:\n{graded.log}"]
    out = [f"the solution lost points on {gid}: {s} (score, max) (a test cell that prints to stderr scores 0)"
           for gid, s in scores.items() if s[0] != s[1]]
    out += [f"a cell raised when run from the solutions: {e}" for e in graded.errors.get("solution", [])]
    out += [f"{student}: cell {i} stalled {sec:.0f} s (jupyter/nbclient#312?)"
            for student, v in graded.stalls.items() for i, sec in v]
    return out


def release_problems(graded: Graded) -> list[str]:
    """(b) Autograded cells the unmodified release earns points on."""
    scores = graded.scores.get("release")
    if not scores:
        return [f"the release was not graded; nbgrader said:\n{graded.log}"]
    return [f"the unmodified release earns {s} on {gid}: this test passes without any work"
            for gid, s in scores.items() if s[0] != 0]


def wrong_answer_problems(unit: Unit, graded: Graded, student: str) -> list[str]:
    """(c) A stored wrong answer must lose <ex>_test's points; graded through nbgrader, it must also keep every
    other test's points, and the fast path must have scored it the same."""
    ex, path = unit.wrong_answers()[student]
    target = f"{ex}_test"
    out = []
    if student in graded.scores or student in unit.nbgrader_students():
        scores = graded.scores.get(student)
        if not scores:
            return [f"{path.name} was not graded; nbgrader said:\n{graded.log}"]
        if target not in scores:
            return [f"{path.name} names exercise {ex!r} but there is no test cell {target!r}"]
        if scores[target][0] != 0:
            out.append(f"the wrong answer {path.name} still earns {scores[target]} on {target}: make the tests catch it")
        out += [f"the wrong answer {path.name} for {ex!r} also loses points on {gid}: {s} (exercises must not "
                "depend on each other's student code)" for gid, s in scores.items() if gid != target and s[0] != s[1]]
    if graded.fast is None:
        return out + [f"the fast path did not run: {graded.fast_error}"]
    got = fast_outcome(graded, student)
    if got is None:
        return out + [f"the fast path did not grade {path.name}"]
    if got.score != 0:
        out.append(f"the wrong answer {path.name} still earns {got.score:g}/{got.max:g} on {target} (fast path): "
                   "make the tests catch it")
    return out


def fast_path_problems(unit: Unit, graded: Graded) -> list[str]:
    """The fast path agrees with nbgrader: full marks for the solution on every test, and the same per-exercise
    scores on every wrong answer graded both ways (the fast path leaves the other exercises at full marks, so
    nbgrader must too)."""
    if graded.fast is None:
        return [f"the fast path did not run: {graded.fast_error}"]
    out = [f"fast path: the solution lost points on {gid}: {o.score:g}/{o.max:g} ({o.message[:300]})"
           for gid, o in graded.fast.solution.items() if o.score != o.max]
    out += [f"fast path: a cell raised when run from the solutions: {e}" for e in graded.fast.errors]
    nb_solution = graded.scores.get("solution", {})
    missing = sorted(set(nb_solution) - set(graded.fast.solution))
    out += [f"fast path: the solution run never reached test cell {gid}" for gid in missing]
    wrong = unit.wrong_answers()
    for student in unit.nbgrader_students():
        theirs = graded.scores.get(student)
        ours = fast_outcome(graded, student)
        if not theirs or ours is None:
            out.append(f"{student}: not graded both ways (nbgrader: {bool(theirs)}, fast path: {ours is not None})")
            continue
        target = f"{wrong[student][0]}_test"
        fast_scores = {gid: (ours.score if gid == target else m, m) for gid, (_, m) in theirs.items()}
        diff = {gid: (theirs[gid], fast_scores[gid]) for gid in theirs if theirs[gid] != fast_scores[gid]}
        if diff:
            out.append(f"{student}: the fast path and nbgrader disagree (nbgrader, fast path): {diff}; fast path "
                       f"said {ours.status}: {ours.message[:300]}")
    return out


def seed_problems(unit: Unit, graded: Graded) -> list[str]:
    """Every stored wrong answer is rejected under every one of the SEEDS grading seeds, not most of them."""
    if graded.fast is None:
        return [f"the fast path did not run: {graded.fast_error}"]
    out = []
    for student, (ex, path) in unit.wrong_answers().items():
        outcomes = {seed: fast_outcome(graded, student, seed) for seed in range(1, SEEDS + 1)}
        passed = sorted(seed for seed, o in outcomes.items() if o is None or o.score != 0)
        if passed:
            out.append(f"{path.name} earns points on {ex}_test under {len(passed)} of {SEEDS} grading seeds "
                       f"(INFOPT_GRADING_SEED={passed[:8]}): a wrong answer must fail every grading, so build the "
                       "case it gets wrong into the hidden tests instead of leaving it to chance")
    return out


def rule_problems(unit: Unit, graded: Graded | None = None) -> list[str]:
    """The unit's rule table covers its exercises' text, and each rule's wrong answer is caught by that rule's check
    (see tests/notebooks/rules.py). Without `graded`, only the table itself is checked."""
    source_nb = release.build_source_notebook(unit.name, unit.solutions)
    table = load_rules(unit.solutions / unit.name)
    stems = {student.removeprefix("wrong_"): ex for student, (ex, _) in unit.wrong_answers().items()}
    out = table_problems(table, source_nb, stems, unit.name)
    if graded is not None and graded.fast is not None:
        messages = {}
        for student in unit.wrong_answers():
            o = fast_outcome(graded, student)
            if o is not None:
                messages[student.removeprefix("wrong_")] = (o.score, o.message)
        out += caught_problems(table, messages)
    return out


def dependence_problems(unit: Unit) -> list[str]:
    """Test cells that read state another exercise's cells made (see tests/notebooks/independence.py)."""
    return independence_problems(release.build_source_notebook(unit.name, unit.solutions))


def main(argv: list[str] | None = None) -> int:
    """`python -m tests.notebooks.harness <unit>`: grade a unit like the tests do and print every score and problem."""
    import sys

    names = argv if argv is not None else sys.argv[1:]
    if len(names) != 1:
        print("usage: python -m tests.notebooks.harness <unit>  (a folder of solutions/)", file=sys.stderr)
        return 2
    unit = Unit(names[0], release.SOLUTIONS, release.COURSE)
    graded = grade_unit(unit)
    for student, scores in graded.scores.items():
        cells = "  ".join(f"{gid}={s:g}/{m:g}" for gid, (s, m) in scores.items())
        print(f"nbgrader   {student:45s} {graded.seconds.get(student, 0):6.1f} s  {cells}")
    if graded.fast is not None:
        print(f"fast path  {'solution run':45s} {graded.fast.seconds:6.1f} s  ({len(graded.fast.variants)} variants)")
        for student in unit.wrong_answers():
            o = fast_outcome(graded, student)
            if o is not None:
                print(f"fast path  {student:45s} {o.seconds:6.1f} s  {o.test}={o.score:g}/{o.max:g} {o.status}")
    problems = structure_problems(unit) + leaks(unit) + solution_problems(graded) + release_problems(graded)
    problems += fast_path_problems(unit, graded) + dependence_problems(unit) + seed_problems(unit, graded)
    problems += rule_problems(unit, graded)
    problems += [p for s in unit.wrong_answers() for p in wrong_answer_problems(unit, graded, s)]
    stale = release.stale_reason(unit.name, unit.solutions, unit.course)
    problems += [f"course/ is stale: {stale}"] if stale else []
    print("\n".join(["", "problems:"] + [f"  - {p}" for p in problems]) if problems else "\nno problems")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
