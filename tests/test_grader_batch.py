"""The grader end to end on two fast units, one batch each: the grader's toy unit gets the whole adversarial set
(uploads, sandbox limits, tampering with the kernel, rigged answers, leaks) plus its stored wrong answers; the notebook
pipeline's fixture unit, a real nbgrader notebook, gets the cases whose outcome depends on the unit's own cells and
hidden tests (all of them with INFOPT_FULL_GRADING=00_fixture) plus its stored wrong answers. Then the leak property
over every output, the CLI and Dask paths."""
import csv
import hashlib
import html
import json
import os
import sqlite3
from pathlib import Path

import pytest

from autograder.assemble import release_notebook
from autograder.executor import MESSAGE_CAP
from autograder.grade import grade, load_unit, main
from autograder.sandbox import Limits
from tests.grader_fixtures.adversarial import (CONTROL, DETACHED_MARKER, TAMPER_ON_WRONG_CODE, Case, cases_for,
                                               expected_score, materialize, unit_dependent)
from tests.grader_fixtures.leaks import grader_lines, leaked_lines
from tests.notebooks.harness import full_grading_asked

pytestmark = pytest.mark.xdist_group("grader")
REPO = Path(__file__).resolve().parent.parent
TOY = Path(__file__).parent / "grader_fixtures" / "toy_unit" / "toy_unit.py"
FIXTURE = Path(__file__).parent / "notebooks" / "fixtures" / "solutions" / "00_fixture" / "00_fixture.py"
UNITS = {"toy_unit": TOY, "00_fixture": FIXTURE}
LIMITS = Limits(memory_mb=400, pids=64, file_mb=16, cpu_s=30, wall_s=30.0, cell_s=6.0)
CASES = {name: cases_for(source.parent / "wrong") for name, source in UNITS.items()}
if not full_grading_asked("00_fixture"):
    CASES["00_fixture"] = unit_dependent(CASES["00_fixture"])
# The toy unit's setup cell imports the checks its tests call; a solution cell that rebinds them voids every test
# that reads them (the second exercise's honest pass too: its verdict came from the no-op).
REBIND_CHECKERS = "check_array = check_equal = check_close = lambda *args, **kwargs: None\n"
CASES["toy_unit"].insert(-1, Case("s6_rebind_checkers", "unsolved first exercise; the checks its tests use rebound "
                                  "to no-ops in the notebook", "stub_target", REBIND_CHECKERS, target=0,
                                  status="flagged", score="zero", flag="check_equal (used by this test)",
                                  judged_status="graded", judged_score="full_minus_target", judged_flag=""))
# The toy unit is graded as `make grade` grades: every test decided by the judge. The fixture unit is graded with the
# tests inside the kernel (`--in-kernel`), which keeps the kernel's own defences covered.
JUDGED = {"toy_unit": True, "00_fixture": False}


def snapshot(*roots: Path) -> dict[str, str]:
    """path -> sha1 of every file under roots (what must not change while grading)."""
    found = {}
    for root in roots:
        for path in sorted(root.rglob("*")) if root.exists() else []:
            if path.is_file():
                found[str(path)] = hashlib.sha1(path.read_bytes()).hexdigest()
    return found


def surviving(marker: str) -> list[str]:
    alive = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                alive.append(pid)
        except OSError:
            pass
    return alive


def _grade_batch(name: str, tmp_path_factory) -> dict:
    """Grade every case of unit `name` in one run; what the tests below read."""
    source = UNITS[name]
    folder = tmp_path_factory.mktemp(f"adversarial-{name}")
    unit = load_unit(name, source)
    # A decoy course on the host (solutions, release, gradebook) for the hostile code to aim at: other people may
    # edit the real solutions/ while this runs, nobody edits the decoy.
    decoy = folder / "decoy"
    (decoy / "solutions" / name).mkdir(parents=True)
    (decoy / "solutions" / name / f"{name}.py").write_bytes(source.read_bytes())
    (decoy / "course" / name).mkdir(parents=True)
    (decoy / "course" / name / f"{name}.ipynb").write_text(json.dumps(unit.release))
    (decoy / "gradebook.db").write_bytes(b"decoy gradebook")
    (decoy / "autograder").mkdir()
    (decoy / "autograder" / "grade.py").write_text("# decoy")
    roster = materialize(unit.master, name, folder, decoy, CASES[name])
    protected = (decoy, source.parent)
    before = snapshot(*protected)
    records = grade(name, folder / "uploads", folder / "out", roster, workers=2, limits=LIMITS, source=source,
                    quiet=True, judged=JUDGED[name])
    return {"name": name, "judged": JUDGED[name], "unit": unit, "records": {r["student"]: r for r in records},
            "order": [r["student"] for r in records], "out": folder / "out", "before": before,
            "after": snapshot(*protected)}


@pytest.fixture(scope="module")
def toy_batch(tmp_path_factory):
    return _grade_batch("toy_unit", tmp_path_factory)


@pytest.fixture(scope="module")
def fixture_batch(tmp_path_factory):
    return _grade_batch("00_fixture", tmp_path_factory)


@pytest.fixture(scope="module", params=list(UNITS))
def batch(request):
    """Each unit's batch in turn (graded once per module)."""
    return request.getfixturevalue("toy_batch" if request.param == "toy_unit" else "fixture_batch")


@pytest.mark.parametrize("case", CASES["toy_unit"], ids=[c.student for c in CASES["toy_unit"]])
def test_each_toy_unit_case_gets_its_status_and_score(toy_batch, case):
    check_case(toy_batch, case)


@pytest.mark.parametrize("case", CASES["00_fixture"], ids=[c.student for c in CASES["00_fixture"]])
def test_each_fixture_unit_case_gets_its_status_and_score(fixture_batch, case):
    check_case(fixture_batch, case)


def check_case(batch: dict, case) -> None:
    """The case's record has the status, score, reason, flag and note it must have."""
    record = batch["records"][case.student]
    case = case.expected(batch["judged"])
    expected = expected_score(case, batch["unit"].master)
    summary = f"{case.what}: {record['status']} {record['total']} reason={record['reason']!r} flags={record['flags']}"
    assert record["status"] == case.status, summary
    assert record["total"] == pytest.approx(expected), summary
    assert case.reason in record["reason"], summary
    assert case.flag in " ".join(record["flags"]), summary
    assert case.note in " ".join(record["notes"]), summary


def test_tampering_with_the_kernel_never_beats_the_wrong_code_alone(batch):
    """The verdict comes from the grader: the same wrong answer scores the same however the kernel was rigged (and
    where the tests run inside the kernel, the rigging is flagged)."""
    if CONTROL not in batch["records"]:
        pytest.skip("the tampering cases run in the toy unit's batch (INFOPT_FULL_GRADING=00_fixture: here too)")
    control = batch["records"][CONTROL]
    assert control["status"] == "graded" and 0 < control["total"] < control["max_total"], control
    for student in (s for s in TAMPER_ON_WRONG_CODE if s in batch["records"]):
        record = batch["records"][student]
        assert record["total"] <= control["total"], (student, record["total"], record["flags"])
        assert batch["judged"] or record["status"] == "flagged", (student, record["flags"])


def test_no_hidden_test_or_solution_line_reaches_any_output(batch):
    """The leak property: over every stored wrong answer and adversarial case, no output holds a grader line."""
    secret = grader_lines(batch["unit"].master, batch["unit"].release)
    assert secret, "the unit has hidden tests and solutions to look for"
    found = leaked_lines(batch["out"], secret)
    assert not found, f"grader text in the outputs: {found[:3]}"
    verbatim = (batch["out"] / "feedback" / "u3_leak_verbatim.html").read_text()
    assert "[hidden]" in html.unescape(verbatim), "the verbatim leak was scrubbed, visibly"


def encoded_payloads(out: Path) -> list[bytes]:
    """Every LEAKED:<base64(zlib(marshal))> payload in the outputs, decoded back to the marshalled bytes."""
    import base64
    import re
    import zlib

    found = []
    for path in out.rglob("*"):
        if path.is_file() and path.suffix in (".html", ".jsonl", ".csv", ".log"):
            for blob in re.findall(r"LEAKED:([A-Za-z0-9+/=]{40,})", path.read_text(errors="replace")):
                data = base64.b64decode(blob[: len(blob) - len(blob) % 4])
                found.append(zlib.decompressobj().decompress(data))   # a payload cut short still reads in part
    return found


def test_no_hidden_test_reaches_the_feedback_encoded(toy_batch):
    """A function that raises its callers' string constants, compressed and base64-encoded past the scrubber, finds
    no test text to encode: under the judge the test never runs in the kernel (the leak worked when it did)."""
    assert toy_batch["judged"]
    payloads = encoded_payloads(toy_batch["out"])
    assert payloads and any(b"serve" in p or b"grader" in p for p in payloads), "no payload was decoded"
    hidden = [b"scale(random 4x5, -3)", b"a name comes before one of its dependencies", b"sum of scale(arange(3)"]
    for payload in payloads:
        assert not [h for h in hidden if h in payload], payload[:300]


def test_every_roster_student_has_a_row_in_roster_order(batch):
    with open(batch["out"] / "grades.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["student"] for r in rows] == [c.student for c in CASES[batch["name"]]]
    assert {"status", "total", "reason"} <= set(rows[0])
    by = {r["student"]: r for r in rows}
    if batch["name"] == "toy_unit":  # the upload cases run on the toy unit only
        assert by["d_missing"]["status"] == "missing" and by["b_bad_json"]["reason"]


def test_a_flood_of_output_never_reaches_the_grader_and_costs_nothing_else(toy_batch):
    """12 display outputs of 10 MB: each is refused by the grader's socket before it is read (MESSAGE_CAP), the
    output channel comes back, and the notebook is graded as if they had not been there."""
    record = toy_batch["records"]["j_flood"]
    assert record["status"] == "graded" and record["total"] == record["max_total"], record
    assert any("dropped by the grader" in event for event in record["events"]), record["events"]
    cells = [json.loads(line) for line in (toy_batch["out"] / "logs" / "j_flood.jsonl").read_text().splitlines()]
    assert max(cell["output_bytes"] for cell in cells) < MESSAGE_CAP
    assert any("dropped by the grader" in cell["output"] for cell in cells)


def test_nothing_outside_the_output_changed_and_no_process_survived(batch):
    changed = sorted(set(batch["before"].items()) ^ set(batch["after"].items()))
    assert not changed, f"grading changed files under solutions/, course/, the gradebook or the unit: {changed[:4]}"
    assert not [p for p in (REPO / "solutions" / "pwned.txt", REPO / "course" / "pwned.txt", Path("/work/pwned.txt"),
                            Path("/usr/pwned.txt")) if p.exists()]
    assert not surviving(DETACHED_MARKER), "a detached student process outlived its sandbox"
    assert not (Path.home() / ".ipython" / "profile_default" / "startup" / "00-grade.py").exists()
    if batch["name"] == "toy_unit":  # the escape runs on the toy unit only (and on unit 01, at the real course)
        log = (batch["out"] / "logs" / "k_escape.jsonl").read_text()
        assert "ESCAPE-REPORT" in log and "READ " not in log and "WROTE " not in log


def test_feedback_shows_results_and_the_students_own_frames(batch):
    pages = list((batch["out"] / "feedback").glob("*.html")) + [batch["out"] / "summary.html"]
    assert len(pages) == len(CASES[batch["name"]]) + 1
    assert not [p.name for p in pages if "<grading test" in html.unescape(p.read_text())]
    # the control (an unsolved exercise) runs on the toy unit; on the fixture, a stored wrong answer's page
    target = CONTROL if batch["name"] == "toy_unit" else next(c.student for c in CASES[batch["name"]]
                                                              if c.student.startswith("x_"))
    page = html.unescape((batch["out"] / "feedback" / f"{target}.html").read_text())
    assert "site-packages" not in page, "the failure message shows the library's frames"
    if target == CONTROL:
        assert "NotImplementedError" in page and "raised in your code" in page


def test_summary_page_and_gradebook(batch):
    summary = (batch["out"] / "summary.html").read_text()
    for title in ("Score distribution per exercise", "Pass rate per test", "Slowest submissions"):
        assert title in summary
    db = batch["out"] / "gradebook.db"
    assert db.exists(), (batch["out"] / "gradebook.error.txt").read_text() if (batch["out"] / "gradebook.error.txt").exists() else ""
    with sqlite3.connect(db) as con:
        rows = con.execute("select student.id, sum(grade.auto_score) from grade join submitted_notebook on "
                           "grade.notebook_id = submitted_notebook.id join submitted_assignment on "
                           "submitted_notebook.assignment_id = submitted_assignment.id join student on "
                           "submitted_assignment.student_id = student.id group by student.id").fetchall()
        sources = con.execute("select count(*) from source_cell").fetchone()[0]
    totals = dict(rows)
    assert totals["a_honest_first"] == pytest.approx(batch["records"]["a_honest_first"]["total"])
    assert totals["l_rigged_eq"] == pytest.approx(batch["records"]["l_rigged_eq"]["total"])
    assert totals["a_honest_first"] == batch["records"]["a_honest_first"]["max_total"]
    assert sources == 0, "the gradebook must not store cell sources (hidden tests)"


def test_cli_on_an_nbgrader_tree_and_the_dask_path(tmp_path):
    unit = load_unit("toy_unit", TOY)
    for student, solved in (("s1", True), ("s2", False)):
        path = tmp_path / "submitted" / student / "toy_unit" / "toy_unit.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(release_notebook(unit.master, solved=solved)))
    code = main(["--unit", "toy_unit", "--submissions", str(tmp_path / "submitted"), "--out", str(tmp_path / "o1"),
                 "--source", str(TOY), "--workers", "1", "--quiet", "--wall-s", "30", "--cell-s", "10"])
    assert code == 0
    rows = {r["student"]: r for r in csv.DictReader(open(tmp_path / "o1" / "grades.csv"))}
    assert rows["s1"]["total"] == "5" and rows["s2"]["total"] == "0" and rows["s2"]["status"] == "graded"
    course_db = tmp_path / "course" / "gradebook.db"
    course_db.parent.mkdir()
    records = grade("toy_unit", tmp_path / "submitted", tmp_path / "o2", workers=2, limits=LIMITS, source=TOY,
                    dask="local", quiet=True, gradebook=course_db)
    assert {r["student"]: r["total"] for r in records} == {"s1": 5.0, "s2": 0.0}
    parts = sorted((tmp_path / "o2" / "gradebooks").glob("worker-*.db"))  # each worker kept its own gradebook
    in_parts = []
    for part in parts:
        with sqlite3.connect(part) as con:
            in_parts += [r[0] for r in con.execute("select student.id from submitted_assignment join student on "
                                                   "submitted_assignment.student_id = student.id")]
    assert sorted(in_parts) == ["s1", "s2"], f"every graded student in exactly one worker gradebook: {in_parts}"
    with sqlite3.connect(course_db) as con:  # ... merged into the course gradebook
        assert con.execute("select sum(auto_score) from grade").fetchone()[0] == 5.0
    main(["--unit", "toy_unit", "--submissions", str(tmp_path / "submitted"), "--out", str(tmp_path / "o4"),
          "--source", str(TOY), "--workers", "2", "--quiet", "--gradebook", str(course_db)])  # merge again
    with sqlite3.connect(course_db) as con:
        assert con.execute("select count(*) from submitted_assignment").fetchone()[0] == 2
        assert con.execute("select sum(auto_score) from grade").fetchone()[0] == 5.0
    assert main(["--unit", "toy_unit", "--submissions", str(tmp_path / "nope"), "--out", str(tmp_path / "o3"),
                 "--source", str(TOY)]) == 2
    with pytest.raises(ValueError, match="inside"):
        grade("toy_unit", tmp_path / "submitted", REPO / "course" / "x", source=TOY)


def test_gradebook_merge_falls_back_to_records(tmp_path):
    """A graded student that no worker gradebook holds (a remote Dask worker, a failed write) is stored from the
    record; a broken worker spec becomes an event on the record, never a lost grade."""
    from autograder.report import grade_cells, record_in_worker_gradebook, write_gradebook

    unit = load_unit("toy_unit", TOY)
    cells = grade_cells(unit)

    def record(student, status="graded"):
        return {"student": student, "status": status, "events": [],
                "tests": [{"grade_id": gid, "points": pts} for gid, pts in cells]}

    spec = {"dir": str(tmp_path), "template": str(tmp_path / "missing.db"), "unit": unit.name, "cells": cells}
    with pytest.raises(FileNotFoundError):
        record_in_worker_gradebook(record("s0"), spec)
    dest = tmp_path / "course.db"
    write_gradebook([record("s1"), record("s2", "missing")], unit, dest)  # no worker gradebooks at all
    part_dir = tmp_path / "parts"
    part_dir.mkdir()
    write_gradebook([], unit, part_dir / "template.db")
    spec = {**spec, "dir": str(part_dir), "template": str(part_dir / "template.db")}
    part = record_in_worker_gradebook(record("s3"), spec)
    write_gradebook([record("s3"), record("s4", "flagged")], unit, dest, [part])
    full = sum(p for _, p in cells)
    with sqlite3.connect(dest) as con:
        totals = dict(con.execute("select student.id, sum(grade.auto_score) from grade join submitted_notebook on "
                                  "grade.notebook_id = submitted_notebook.id join submitted_assignment on "
                                  "submitted_notebook.assignment_id = submitted_assignment.id join student on "
                                  "submitted_assignment.student_id = student.id group by student.id").fetchall())
        students = {r[0] for r in con.execute("select id from student")}
        review = dict(con.execute("select student.id, max(grade.needs_manual_grade) from grade join submitted_notebook "
                                  "on grade.notebook_id = submitted_notebook.id join submitted_assignment on "
                                  "submitted_notebook.assignment_id = submitted_assignment.id join student on "
                                  "submitted_assignment.student_id = student.id group by student.id").fetchall())
    assert totals == {"s1": full, "s3": full, "s4": full} and students == {"s1", "s2", "s3", "s4"}
    assert review == {"s1": 0, "s3": 0, "s4": 1}
