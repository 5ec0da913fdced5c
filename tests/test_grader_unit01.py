"""The committed adversarial set and a stored wrong answer per exercise of unit 01, graded in one batch with small
limits (INFOPT_FULL_GRADING=01_graphs_ir: every stored wrong answer).

Slow (every case executes the unit's notebook in a sandbox), so it is marked `notebook` as well as grouped. The fast
twins of these tests run the same cases on two small units (tests/test_grader_batch.py).
"""
import hashlib
import os
from pathlib import Path

import pytest

from autograder.grade import grade, load_unit
from autograder.sandbox import Limits
from tests.grader_fixtures.adversarial import (CONTROL, DETACHED_MARKER, TAMPER_ON_WRONG_CODE, UNIT01_CASES,
                                               cases_for, expected_score, materialize, unit_dependent)
from tests.grader_fixtures.leaks import grader_lines, leaked_lines
from tests.notebooks.harness import full_grading_asked

pytestmark = [pytest.mark.xdist_group("grader"), pytest.mark.notebook]
REPO = Path(__file__).resolve().parent.parent
UNIT = "01_graphs_ir"
LIMITS = Limits(memory_mb=1536, pids=128, file_mb=64, cpu_s=300, wall_s=180.0, cell_s=40.0)


def _cases() -> list:
    """The adversarial cases whose outcome depends on the real unit (its cells, hidden tests and checkers), and the
    first stored wrong answer of each exercise (every case and every wrong answer when INFOPT_FULL_GRADING names the
    unit or says all): each case runs the whole notebook in a sandbox (113 cases took 13.5 minutes of a 2-core
    machine); the toy and fixture batches (tests/test_grader_batch.py) run the cases that do not depend on the unit,
    and tests/test_notebooks.py already rejects every wrong answer."""
    cases = cases_for(REPO / "solutions" / UNIT / "wrong")
    cases = cases[:-1] + UNIT01_CASES + cases[-1:]   # the restore-and-re-arm attacks: written for this unit
    if full_grading_asked(UNIT):
        return cases
    seen: set = set()
    kept = []
    mine = {c.student for c in unit_dependent(cases)}
    # and the escape: here it aims at the real course (solutions/ beside the venv the sandbox shows), not a decoy
    for case in (c for c in cases if c.student in mine or c.student == "k_escape"):
        if case.student.startswith("x_"):
            if case.target in seen:
                continue
            seen.add(case.target)
        kept.append(case)
    return kept


CASES = _cases()


def snapshot() -> dict[str, str]:
    """sha1 of every file under solutions/<unit>, course/<unit> and any gradebook in the repo."""
    found = {}
    roots = [REPO / "solutions" / UNIT, REPO / "course" / UNIT]
    for root in roots:
        for path in sorted(root.rglob("*")) if root.exists() else []:
            if path.is_file():
                found[str(path)] = hashlib.sha1(path.read_bytes()).hexdigest()
    for path in REPO.glob("**/gradebook.db"):
        if ".venv" not in path.parts and "build" not in path.parts:
            found[str(path)] = hashlib.sha1(path.read_bytes()).hexdigest()
    return found


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    if not (REPO / "solutions" / UNIT / f"{UNIT}.py").is_file():
        pytest.skip("unit 01 is not written yet")
    folder = tmp_path_factory.mktemp("unit01")
    unit = load_unit(UNIT)
    roster = materialize(unit.master, UNIT, folder, REPO, CASES)  # the escape case aims at the real course
    before = snapshot()
    records = grade(UNIT, folder / "uploads", folder / "out", roster, workers=2, limits=LIMITS, quiet=True)
    return {"unit": unit, "records": {r["student"]: r for r in records}, "before": before, "after": snapshot(),
            "out": folder / "out", "order": [r["student"] for r in records]}


@pytest.mark.parametrize("case", CASES, ids=[c.student for c in CASES])
def test_case(batch, case):
    record = batch["records"][case.student]
    case = case.expected(judged=True)   # make grade decides unit 01's tests in the judge
    summary = f"{case.what}: {record['status']} {record['total']} reason={record['reason']!r} flags={record['flags']}"
    assert record["status"] == case.status, summary
    assert record["total"] == pytest.approx(expected_score(case, batch["unit"].master)), summary
    assert case.reason in record["reason"] and case.flag in " ".join(record["flags"]), summary
    assert case.note in " ".join(record["notes"]), summary


def test_tampering_never_beats_the_same_wrong_code(batch):
    tampering = [s for s in TAMPER_ON_WRONG_CODE if s in batch["records"]]
    if not tampering:
        pytest.skip("the tampering cases run in the toy unit's batch (tests/test_grader_batch.py); "
                    "INFOPT_FULL_GRADING=01_graphs_ir runs them on unit 01 too")
    for student in tampering:
        assert batch["records"][student]["total"] <= batch["records"][CONTROL]["total"], student


def test_no_hidden_test_or_solution_line_in_any_output(batch):
    secret = grader_lines(batch["unit"].master, batch["unit"].release)
    assert len(secret) > 20
    found = leaked_lines(batch["out"], secret)
    assert not found, f"grader text in the outputs: {found[:3]}"


def test_roster_rows_repo_untouched_no_survivors(batch):
    assert batch["order"] == [c.student for c in CASES]
    changed = sorted(set(batch["before"].items()) ^ set(batch["after"].items()))
    assert not changed, f"grading changed files under solutions/, course/ or a gradebook: {changed[:4]}"
    assert not (REPO / "solutions" / "pwned.txt").exists() and not (REPO / "course" / "pwned.txt").exists()
    log = (batch["out"] / "logs" / "k_escape.jsonl").read_text()
    assert "ESCAPE-REPORT" in log and "READ " not in log and "WROTE " not in log
    alive = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if DETACHED_MARKER in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                alive.append(pid)
        except OSError:
            pass
    assert not alive, "a detached student process outlived its sandbox"
