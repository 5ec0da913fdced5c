"""The committed adversarial set on unit 01, graded in one batch with small limits (issue 5's acceptance test).

Slow (every case executes the unit's notebook in a sandbox), so it is marked `notebook` as well as grouped.
"""
import hashlib
import os
from pathlib import Path

import pytest

from autograder.grade import grade, load_unit
from autograder.sandbox import Limits
from tests.grader_fixtures.adversarial import CASES, DETACHED_MARKER, expected_score, materialize

pytestmark = [pytest.mark.xdist_group("grader"), pytest.mark.notebook]
REPO = Path(__file__).resolve().parent.parent
UNIT = "01_graphs_ir"
LIMITS = Limits(memory_mb=1536, pids=128, file_mb=64, cpu_s=300, wall_s=180.0, cell_s=40.0)


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
    roster = materialize(unit.master, UNIT, folder, REPO)
    before = snapshot()
    records = grade(UNIT, folder / "uploads", folder / "out", roster, workers=2, limits=LIMITS, quiet=True)
    return {"unit": unit, "records": {r["student"]: r for r in records}, "before": before, "after": snapshot(),
            "out": folder / "out", "order": [r["student"] for r in records]}


@pytest.mark.parametrize("case", CASES, ids=[c.student for c in CASES])
def test_case(batch, case):
    record = batch["records"][case.student]
    summary = f"{case.what}: {record['status']} {record['total']} reason={record['reason']!r} flags={record['flags']}"
    assert record["status"] == case.status, summary
    assert record["total"] == pytest.approx(expected_score(case, batch["unit"].master)), summary
    assert case.reason in record["reason"] and case.flag in " ".join(record["flags"]), summary
    assert case.note in " ".join(record["notes"]), summary


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
