"""Grade a unit the way the notebook tests need, and read what a test needs from the sources: exercises,
visible/hidden test lines, secret lines.

Grading a unit is ONE nbgrader process, and the same code serves both tiers of the suite (`make test` and
`make proof`). nbgrader grades the solution (full marks) and the stored wrong answers that go through nbgrader end
to end: packed one per exercise into as few submissions as the choice needs in `make test` (each pack keeps an
exercise solved after its first wrong one, which must keep its points), each alone (and the release too) in the
full proof. Its kernel for the solution hosts the fast path (tests/notebooks/forkpoints.py): a fork point before
each exercise, which after nbgrader is done grades every stored wrong answer of that exercise under each grading seed
of the tier, the exercise's release stub (the unmodified release must earn zero), and the solution itself (a control:
full marks, or the fork point is broken). The wrong answers graded both ways prove the fast path equals nbgrader; the
independence check (tests/notebooks/independence.py) proves the exercises may be graded alone, which is also what
makes packing sound.

The tiers differ only in parameters: `make test` grades under one fixed grading seed (TEST_SEED, so CI is
deterministic); `make proof` (tests/notebooks/proof.py) sets INFOPT_GRADING_SEEDS=20 and INFOPT_FULL_GRADING.

A unit here is (name, solutions dir, course dir), so the same code checks the real units and the fixture.
"""
from __future__ import annotations

import functools
import json
import os
import re
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder import nbgrader_course as nc
from autograder import release
from tests.notebooks.fastpath import FastResult, Variant
from tests.notebooks.forkpoints import ForkPoints, control_variant
from tests.notebooks.independence import independence_problems
from tests.notebooks.manifest import Manifest, load_manifest
from tests.notebooks.rules import caught_problems, load_rules, table_problems
from tests.notebooks.sensitivity import NOT_APPLICABLE, frozen_variants

# One cell may run CELL_TIMEOUT_S. Each notebook gets a wall budget inside the one nbgrader process of
# BUDGET_FACTOR x its manifest's `notebook_s` (the margin absorbs a loaded CI box).
CELL_TIMEOUT_S = int(os.environ.get("INFOPT_CELL_TIMEOUT_S", 90))
BUDGET_FACTOR = float(os.environ.get("INFOPT_NOTEBOOK_BUDGET_FACTOR", 2.5))
# The grading seed of `make test`: every run grades the same hidden inputs, so CI is deterministic. The proof grades
# under seeds TEST_SEED .. INFOPT_GRADING_SEEDS (20 in `make proof`).
TEST_SEED = 1
SEEDS = tuple(range(TEST_SEED, TEST_SEED + int(os.environ.get("INFOPT_GRADING_SEEDS", 1))))
# Units (comma-separated, or "all") whose every stored wrong answer (and the release) also goes through nbgrader,
# each alone, whatever their manifest says: the slow, complete proof that the fast path scores as nbgrader does.
FULL_GRADING = {u.strip() for u in os.environ.get("INFOPT_FULL_GRADING", "").split(",") if u.strip()}
# nbgrader processes run at once when a unit sends many submissions through nbgrader (the full proof).
NBGRADER_WORKERS = max(1, min(4, os.cpu_count() or 1))

STALL_S = 5.0               # an execute_reply this late after idle is the jupyter/nbclient#312 stall
MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
TRIVIAL = re.compile(r"^(#.*|pass|else:|try:|finally:|return|continue|break|[\])}]+,?|\"\"\"|\'\'\'|)$")


def full_grading_asked(unit: str) -> bool:
    """True when INFOPT_FULL_GRADING names `unit` or says `all`."""
    return unit in FULL_GRADING or "all" in FULL_GRADING


def release_variant(exercise: str) -> str:
    """The fast-path variant id of an exercise's release stub (the unmodified release's solution cell)."""
    return f"release:{exercise}"


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

    @property
    def full_grading(self) -> bool:
        """Every wrong answer (and the release) through nbgrader, each alone: the manifest's or the proof's choice."""
        return self.manifest.full_grading or full_grading_asked(self.name)

    def nbgrader_choice(self) -> list[str]:
        """The stored wrong answers `make test` sends through nbgrader too: one per exercise but the last in the
        notebook (which stays solved, and must keep its points): the manifest's `nbgrader_wrong` where it names
        some for the exercise, else the exercise's first stored wrong answer."""
        wrong = self.wrong_answers()
        m = self.manifest
        named = [f"wrong_{w}" for w in m.nbgrader_wrong]
        unknown = [c for c in named if c not in wrong]
        if unknown:
            raise ValueError(f"{m.path}: nbgrader_wrong names {unknown}, which are not stored wrong answers "
                             f"({sorted(wrong)})")
        order = exercise_order(release.build_source_notebook(self.name, self.solutions))
        last = [c for c in named if wrong[c][0] == order[-1]]
        if last:
            raise ValueError(f"{m.path}: nbgrader_wrong names {last}, a wrong answer of the last exercise "
                             f"{order[-1]!r}: it stays solved in the nbgrader submission, to prove that the wrong "
                             "answers before it cost only their own exercise")
        chosen = []
        for ex in order[:-1]:
            mine = [c for c in named if wrong[c][0] == ex]
            chosen += mine or [s for s, (e, _) in wrong.items() if e == ex][:1]
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


def exercise_order(source_nb) -> list[str]:
    """The exercises' grade_ids in notebook order."""
    return [c.metadata["nbgrader"]["grade_id"] for c in source_nb.cells
            if c.metadata.get("nbgrader", {}).get("solution")]


def pack_submissions(chosen: list[tuple[str, str]], order: list[str], alone: set[str]) -> dict[str, dict[str, str]]:
    """Submissions for nbgrader, {submission id: {exercise: wrong answer}}: the k-th chosen wrong answer of every
    exercise goes into pack k (so a pack holds at most one per exercise), and those in `alone` (the full proof)
    get a submission each, named after themselves. Each pack must leave an
    exercise solved after its first wrong one: that exercise keeping its points proves a wrong answer costs only
    its own exercise, under nbgrader."""
    packs: list[dict[str, str]] = []
    out: dict[str, dict[str, str]] = {}
    for student, ex in chosen:
        if student in alone:
            out[student] = {ex: student}
            continue
        pack = next((p for p in packs if ex not in p), None)
        if pack is None:
            packs.append(pack := {})
        pack[ex] = student
    for i, pack in enumerate(packs, 1):
        first = min(order.index(ex) for ex in pack)
        if not [ex for ex in order[first + 1:] if ex not in pack]:
            raise ValueError(f"the wrong answers packed for nbgrader ({sorted(pack.values())}) leave no exercise "
                             f"solved after {order[first]!r}: leave one exercise after the first out of the "
                             "manifest's nbgrader_wrong (it proves the others cost only their own exercise)")
        out[f"pack{i}"] = dict(sorted(pack.items(), key=lambda kv: order.index(kv[0])))
    return out


@dataclass
class Graded:
    """The outcome of grading a unit: per-submission per-cell scores and per-notebook diagnostics."""

    scores: dict[str, dict[str, tuple[float, float]]]
    errors: dict[str, list[str]] = field(default_factory=dict)   # submission -> cells that raised
    stalls: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)     # submission -> kernel execution time
    root: Path | None = None
    log: str = ""                                                # nbgrader's output (tail), for messages
    fast: FastResult | None = None                               # the fast path's outcomes (every variant)
    packs: dict[str, dict[str, str]] = field(default_factory=dict)   # submission -> {exercise: wrong answer}

    def submission_of(self, student: str) -> str | None:
        """The nbgrader submission that holds a wrong answer (None: graded by the fast path only)."""
        return next((sub for sub, pack in self.packs.items() if student in pack.values()), None)


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
    """Grade a unit's solution, release and every wrong answer (one nbgrader process hosting the fork points), cached
    per process, failures included, so a broken unit costs one run, not one per test."""
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


def fast_outcome(graded: Graded, student: str, seed: int = TEST_SEED):
    """The fast path's outcome for a variant under one seed (TEST_SEED stands for "the" fast-path grade)."""
    return None if graded.fast is None else graded.fast.variants.get(seeded(student, seed))


def release_stubs(release_nb) -> dict[str, str]:
    """{exercise: the release's solution cell}: what a student who changed nothing submits."""
    return {c.metadata["nbgrader"]["grade_id"]: c.source for c in release_nb.cells
            if c.metadata.get("nbgrader", {}).get("solution")}


def _grade_unit(unit: Unit) -> Graded:
    source_nb = release.build_source_notebook(unit.name, unit.solutions)
    release_nb = nbformat.read(unit.release_file, as_version=4)
    wrong = unit.wrong_answers()
    data_dir = release.data_dir(unit.name, unit.solutions)
    budget = BUDGET_FACTOR * unit.manifest.notebook_s
    graded = Graded(scores={})
    variants = [Variant(student, ex, path.read_text(), seeds=SEEDS) for student, (ex, path) in wrong.items()]
    variants += [Variant(release_variant(ex), ex, code, seeds=(TEST_SEED,))
                 for ex, code in release_stubs(release_nb).items()]
    variants += [Variant(f.id, f.exercise, f.code, seeds=SEEDS) for f in frozen_variants(source_nb)]
    chosen = list(wrong) if unit.full_grading else unit.nbgrader_choice()
    graded.packs = pack_submissions([(s, wrong[s][0]) for s in chosen], exercise_order(source_nb),
                                    set(chosen) if unit.full_grading else set())
    subs = {"solution": nc.make_submission(release_nb, source_nb)}
    if unit.full_grading:
        subs["release"] = release_nb
    for sub, pack in graded.packs.items():
        subs[sub] = nc.make_submission(release_nb, source_nb, {ex: wrong[st][1].read_text() for ex, st in pack.items()})
    workers = NBGRADER_WORKERS if len(subs) > 4 else 1
    _empty_gradebook()  # made here, once, not by the first of several nbgrader threads at the same moment
    groups = [dict(list(subs.items())[i::workers]) for i in range(workers)]
    points = ForkPoints(Path(tempfile.mkdtemp(prefix=f"forkpoints-{unit.name}-")), source_nb, variants,
                        host="solution", cell_timeout_s=CELL_TIMEOUT_S)
    try:
        with points.holding(), ThreadPoolExecutor(workers) as pool:
            runs = list(pool.map(lambda group: _nbgrader(unit, source_nb, data_dir, group, budget, points.env()),
                                 groups))
        for root, log in runs:
            graded.root = graded.root or root
            graded.log += log[-3000:]
            graded.scores.update(nc.read_scores(root, unit.name))
        for (root, _), group in zip(runs, groups):
            for sub in group:
                try:
                    nb = nc.autograded_notebook(root, unit.name, sub)
                except FileNotFoundError:
                    continue
                graded.errors[sub] = _cell_errors(nb)
                graded.stalls[sub] = nc.stalled_cells(nb, STALL_S)
                graded.seconds[sub] = _kernel_seconds(nb)
        graded.fast = points.collect(graded.scores.get("solution", {}), graded.errors.get("solution", []),
                                     budget_s=budget + 10 * len(variants) * CELL_TIMEOUT_S)
        graded.seconds["fast path"] = graded.fast.seconds
    finally:
        points.close()
    return graded


@functools.cache
def _empty_gradebook() -> Path:
    """One empty gradebook per checkout and nbgrader version (build/), shared by every unit and pytest worker."""
    from importlib.metadata import version

    folder = release.REPO / "build" / f"nbgrader-{version('nbgrader')}"
    folder.mkdir(parents=True, exist_ok=True)
    return nc.empty_gradebook(folder)


def _nbgrader(unit: Unit, source_nb, data_dir: Path, subs: dict, budget: float,
              env: dict[str, str]) -> tuple[Path, str]:
    """One nbgrader process: generate the assignment and autograde `subs` ({id: notebook}) under TEST_SEED, with
    `env` (the fork points') added to its environment."""
    root = Path(tempfile.mkdtemp(prefix=f"grade-{unit.name}-"))
    nc.make_course_root(root, unit.name, source_nb, data_dir, gradebook=_empty_gradebook())
    for sub, nb in subs.items():
        nc.place_submission(root, unit.name, sub, nb)
    log = nc.generate_and_autograde(root, unit.name, len(subs), cell_timeout_s=CELL_TIMEOUT_S,
                                    notebook_budget_s=budget, env={**env, "INFOPT_GRADING_SEED": str(TEST_SEED)})
    return root, log


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
    """(b) Autograded cells the unmodified release earns points on: each exercise's release stub on the fast path,
    and the release through nbgrader too when it was graded there (the full proof)."""
    stubs = sorted({vid.split("@")[0] for vid in graded.fast.variants if vid.startswith(release_variant(""))})
    out = [] if stubs else ["the fast path graded no exercise's release stub"]
    for vid in stubs:
        o, ex = fast_outcome(graded, vid), vid.removeprefix(release_variant(""))
        if o.status == "harness":
            out.append(f"the fast path did not grade the release's {ex!r}: {o.message}")
        elif o.score != 0:
            out.append(f"the unmodified release earns {o.score:g}/{o.max:g} on {ex}_test: this test passes without "
                       "any work")
    if "release" in graded.scores:
        out += [f"the unmodified release earns {s} on {gid} (nbgrader): this test passes without any work"
                for gid, s in graded.scores["release"].items() if s[0] != 0]
    return out


def wrong_answer_problems(unit: Unit, graded: Graded, student: str) -> list[str]:
    """(c) A stored wrong answer must lose <ex>_test's points on the fast path. Graded through nbgrader too, it
    must lose them there, and every exercise its submission left solved must keep its points (the exercise a pack
    keeps solved after its wrong answers; every other exercise when it was graded alone)."""
    ex, path = unit.wrong_answers()[student]
    target = f"{ex}_test"
    out = []
    sub = graded.submission_of(student)
    if sub is not None:
        scores = graded.scores.get(sub)
        if not scores:
            return [f"{path.name} was not graded by nbgrader (submission {sub}: a wrong answer that kills its kernel "
                    "stops the whole pack; choose another in the manifest's nbgrader_wrong); nbgrader said:\n"
                    f"{graded.log}"]
        if target not in scores:
            return [f"{path.name} names exercise {ex!r} but there is no test cell {target!r}"]
        if scores[target][0] != 0:
            out.append(f"the wrong answer {path.name} still earns {scores[target]} on {target} (nbgrader, submission "
                       f"{sub}): make the tests catch it")
        wrong_here = {f"{e}_test" for e in graded.packs[sub]}
        out += [f"the wrong answer {path.name} for {ex!r} (nbgrader, submission {sub}) also loses points on {gid}: "
                f"{s} (exercises must not depend on each other's student code)"
                for gid, s in scores.items() if gid not in wrong_here and s[0] != s[1]]
    got = fast_outcome(graded, student)
    if got is None or got.status == "harness":
        return out + [f"the fast path did not grade {path.name}" + (f": {got.message}" if got else "")]
    if got.score != 0:
        out.append(f"the wrong answer {path.name} still earns {got.score:g}/{got.max:g} on {target} (fast path): "
                   "make the tests catch it")
    return out


def fast_path_problems(unit: Unit, graded: Graded) -> list[str]:
    """The fast path can be trusted and agrees with nbgrader: each fork point gives the solution itself full marks
    (else its state is not the notebook's), no variant went ungraded, and every wrong answer graded both ways gets
    the same score from both (the fast path grades each with the other exercises solved, and the exercises a pack
    left solved must keep their points under nbgrader: wrong_answer_problems)."""
    out = []
    for gid in graded.scores.get("solution", {}):
        o = fast_outcome(graded, control_variant(gid.removesuffix("_test")))
        if o is not None and o.score != o.max:
            out.append(f"fast path: the fork point before {gid.removesuffix('_test')!r} gave the solution itself "
                       f"{o.score:g}/{o.max:g} ({o.status}: {o.message[:300]}): its state is not the notebook's, so "
                       "its verdicts on wrong answers cannot be trusted")
    out += sorted({f"fast path: {o.message}" for o in graded.fast.variants.values() if o.status == "harness"})
    for sub, pack in graded.packs.items():
        theirs = graded.scores.get(sub)
        if not theirs:
            out.append(f"{sub} ({sorted(pack.values())}): not graded by nbgrader")
            continue
        for ex, student in pack.items():
            ours = fast_outcome(graded, student)
            gid = f"{ex}_test"
            if ours is None:
                out.append(f"{student}: not graded by the fast path")
            elif gid in theirs and theirs[gid][0] != ours.score:
                out.append(f"{student}: the fast path and nbgrader (submission {sub}) disagree on {gid}: nbgrader "
                           f"{theirs[gid][0]:g}, fast path {ours.score:g} ({ours.status}: {ours.message[:300]})")
    return out


def seed_problems(unit: Unit, graded: Graded) -> list[str]:
    """Every stored wrong answer is rejected under every one of the SEEDS grading seeds, not most of them."""
    out = []
    for student, (ex, path) in unit.wrong_answers().items():
        outcomes = {seed: fast_outcome(graded, student, seed) for seed in SEEDS}
        passed = sorted(seed for seed, o in outcomes.items() if o is None or o.score != 0 or o.status == "harness")
        if passed:
            out.append(f"{path.name} earns points on {ex}_test under {len(passed)} of {len(SEEDS)} grading seeds "
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


def sensitivity_problems(unit: Unit, graded: Graded) -> list[str]:
    """Every argument-freezing variant (tests/notebooks/sensitivity.py) loses its points under every grading seed,
    unless the rule table's [[insensitive]] says why that argument cannot matter; and no such row is stale."""
    source_nb = release.build_source_notebook(unit.name, unit.solutions)
    table = load_rules(unit.solutions / unit.name)
    excused = {(row.exercise, row.argument): row for row in (table.insensitive if table else ())}
    out = []
    frozen = frozen_variants(source_nb)
    for f in frozen:
        outcomes = {seed: fast_outcome(graded, f.id, seed) for seed in SEEDS}
        row = excused.pop((f.exercise, f.argument), None)
        if any(o is not None and NOT_APPLICABLE in o.message for o in outcomes.values()):
            if row is not None:
                out.append(f"rules.toml: [[insensitive]] {f.exercise}: {f.argument!r} is not needed: the argument "
                           "cannot be copied, so it is never frozen; remove the row")
            continue
        passed = sorted(seed for seed, o in outcomes.items() if o is None or o.score != 0 or o.status == "harness")
        if passed and row is None:
            out.append(f"{f.exercise}: a solution that ignores `{f.argument}` (frozen to its default, or to the "
                       f"first call's value) earns points under grading seeds {passed[:8]}: vary it in the hidden "
                       "tests, or add an [[insensitive]] row to rules.toml saying why it cannot matter")
        elif row is not None and not passed:
            out.append(f"rules.toml: [[insensitive]] {f.exercise}: {f.argument!r} is stale: the hidden tests reject "
                       "a solution that ignores it; remove the row")
    out += [f"rules.toml: [[insensitive]] {ex}: {arg!r} names no argument of the exercise (the frozen ones: "
            f"{sorted(f.argument for f in frozen if f.exercise == ex)})" for ex, arg in excused]
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
    for sub, scores in graded.scores.items():
        cells = "  ".join(f"{gid}={s:g}/{m:g}" for gid, (s, m) in scores.items())
        print(f"nbgrader   {sub:45s} {graded.seconds.get(sub, 0):6.1f} s  {cells}")
        if sub in graded.packs and list(graded.packs[sub].values()) != [sub]:
            print(f"{'':11s}  holds {', '.join(graded.packs[sub].values())}")
    if graded.fast is not None:
        print(f"fast path  {'fork points':45s} {graded.fast.seconds:6.1f} s  ({len(graded.fast.variants)} variants)")
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
