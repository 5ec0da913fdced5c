"""Grading outputs: grades.csv (a row per roster student), per-student feedback HTML, the instructor summary page
(plotly), results.jsonl (everything), and an nbgrader gradebook.db with the autograded scores.

Feedback shows each test's pass/fail and message, never the hidden tests' source.
"""
from __future__ import annotations

import contextlib
import csv
import json
from pathlib import Path
from typing import Any, Iterator

from .assemble import exercise_of

_TEMPLATES = Path(__file__).resolve().parent / "templates"


def _env():
    import jinja2

    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(_TEMPLATES)), autoescape=True)


def exercise_names(unit) -> list[str]:
    """The unit's exercises in notebook order (from its test cells' grade_ids)."""
    names: list[str] = []
    for cell in unit.master:
        if cell.kind == "test" and exercise_of(cell.grade_id) not in names:
            names.append(exercise_of(cell.grade_id))
    return names


def write_csv(records: list[dict], exercises: list[str], path: Path) -> None:
    """grades.csv: student, status, total, max, one column per exercise, reason, flags, notes, seconds."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", "status", "total", "max_total", *exercises, "reason", "flags", "notes",
                         "seconds"])
        for r in records:
            writer.writerow([r["student"], r["status"], f"{r['total']:g}", f"{r['max_total']:g}",
                             *(f"{r['exercises'].get(e, {}).get('score', 0.0):g}" for e in exercises),
                             r["reason"], " | ".join(r["flags"]), " | ".join(r["notes"]), f"{r['seconds']:.2f}"])


def write_feedback(records: list[dict], unit_name: str, folder: Path) -> None:
    """feedback/<student>.html for every student, from templates/feedback.html.j2."""
    folder.mkdir(parents=True, exist_ok=True)
    template = _env().get_template("feedback.html.j2")
    for record in records:
        (folder / f"{record['student']}.html").write_text(template.render(r=record, unit=unit_name),
                                                          encoding="utf-8")


def _figures(records: list[dict], exercises: list[str]) -> str:
    """Plotly figures as HTML: score distribution per exercise, pass rate per test, slowest submissions."""
    import plotly.graph_objects as go

    graded = [r for r in records if r["status"] in ("graded", "flagged")]
    parts = []
    fig = go.Figure()
    for name in exercises:
        fig.add_trace(go.Box(y=[r["exercises"].get(name, {}).get("score", 0.0) for r in graded], name=name,
                             boxpoints="all", jitter=0.4))
    fig.update_layout(title="Score distribution per exercise (graded and flagged students)",
                      yaxis_title="points", showlegend=False, height=380)
    parts.append(fig)
    tests: dict[str, list[int]] = {}
    for r in graded:
        for t in r["tests"]:
            tests.setdefault(t["grade_id"], []).append(1 if t["status"] == "pass" else 0)
    fig = go.Figure(go.Bar(x=list(tests), y=[100 * sum(v) / len(v) for v in tests.values()],
                           text=[f"{sum(v)}/{len(v)}" for v in tests.values()]))
    fig.update_layout(title="Pass rate per test", yaxis_title="% of students", yaxis_range=[0, 105], height=360)
    parts.append(fig)
    slow = sorted((r for r in records if r["seconds"] > 0), key=lambda r: -r["seconds"])[:15]
    fig = go.Figure(go.Bar(x=[r["seconds"] for r in slow][::-1], y=[r["student"] for r in slow][::-1],
                           orientation="h"))
    fig.update_layout(title="Slowest submissions (seconds in the sandbox)", xaxis_title="s", height=380)
    parts.append(fig)
    return "\n".join(f.to_html(full_html=False, include_plotlyjs=(i == 0)) for i, f in enumerate(parts))


def write_summary(records: list[dict], exercises: list[str], unit_name: str, path: Path) -> None:
    """summary.html: counts, figures, the students who need attention, the slowest submissions."""
    counts: dict[str, int] = {}
    for r in records:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    mechanisms = next((r["mechanisms"] for r in records if r.get("mechanisms")), {})
    attention = [r for r in records if r["status"] != "graded" or r["events"]]
    slowest = sorted(records, key=lambda r: -r["seconds"])[:10]
    html = _env().get_template("summary.html.j2").render(
        unit=unit_name, records=records, counts=counts, mechanisms=mechanisms, attention=attention,
        slowest=slowest, figures=_figures(records, exercises))
    path.write_text(html, encoding="utf-8")


@contextlib.contextmanager
def open_gradebook(path: Path) -> Iterator[Any]:
    """An nbgrader Gradebook on sqlite file `path` (created if missing), quiet about nbgrader's own warnings."""
    import os
    import sys
    import warnings

    from nbgrader.api import Gradebook

    bindir = os.path.dirname(sys.executable)  # nbgrader runs `alembic` from the venv's bin/ to create a database
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    with warnings.catch_warnings(), Gradebook(f"sqlite:///{path}") as gb:
        warnings.simplefilter("ignore")  # nbgrader's own SQLAlchemy autoflush warnings
        yield gb


def grade_cells(unit) -> list[tuple[str, float]]:
    """(grade_id, points) of the unit's autograded test cells, in notebook order."""
    return [(c.grade_id, float(c.points)) for c in unit.master if c.kind == "test"]


def init_gradebook(gb: Any, unit_name: str, cells: list[tuple[str, float]]) -> None:
    """Make sure the assignment, its notebook and its grade cells exist (never their sources: hidden tests)."""
    from nbgrader.api import MissingEntry

    gb.update_or_create_assignment(unit_name)
    try:
        gb.find_notebook(unit_name, unit_name)
    except MissingEntry:
        gb.add_notebook(unit_name, unit_name)
    for grade_id, points in cells:
        try:
            gb.find_grade_cell(grade_id, unit_name, unit_name)
        except MissingEntry:
            gb.add_grade_cell(grade_id, unit_name, unit_name, max_score=points, cell_type="code")


def store_scores(gb: Any, unit_name: str, cells: list[tuple[str, float]], student: str, points: dict[str, float],
                 needs_review: bool) -> None:
    """Replace `student`'s submission of the unit with these auto scores (a later grading run wins)."""
    from nbgrader.api import MissingEntry

    gb.update_or_create_student(student)
    try:
        gb.remove_submission(unit_name, student)
    except MissingEntry:
        pass
    gb.add_submission(unit_name, student)
    for grade_id, _ in cells:
        grade = gb.find_grade(grade_id, unit_name, unit_name, student)
        grade.auto_score = points.get(grade_id, 0.0)
        grade.needs_manual_grade = needs_review
    gb.db.commit()


def _scored(record: dict) -> bool:
    return record["status"] in ("graded", "flagged")


def store_record(gb: Any, unit_name: str, cells: list[tuple[str, float]], record: dict) -> None:
    """Store a graded record's per-test points (a flagged record is marked for manual review)."""
    store_scores(gb, unit_name, cells, record["student"], {t["grade_id"]: t["points"] for t in record["tests"]},
                 record["status"] == "flagged")


def record_in_worker_gradebook(record: dict, spec: dict) -> Path:
    """Store one graded record in this worker process's own gradebook (spec: dir, template, unit, cells).

    Each worker writes only its own sqlite file, so parallel workers never contend for a lock; the file starts as a
    copy of the run's template (assignment and grade cells already there) and is merged into the course gradebook
    at the end (`write_gradebook`)."""
    import os
    import shutil

    path = Path(spec["dir"]) / f"worker-{os.getpid()}.db"
    if not path.exists():
        shutil.copyfile(spec["template"], path)
    if _scored(record):
        with open_gradebook(path) as gb:
            store_record(gb, spec["unit"], spec["cells"], record)
    return path


def merge_gradebooks(parts: list[Path], dest: Any, unit_name: str, cells: list[tuple[str, float]]) -> set[str]:
    """Copy every submission's auto scores from the worker gradebooks `parts` into the open gradebook `dest`."""
    merged: set[str] = set()
    for part in parts:
        with open_gradebook(part) as gb:
            try:
                subs = gb.find_assignment(unit_name).submissions
            except Exception:  # noqa: BLE001 (an empty part: its worker graded nobody)
                continue
            for sub in subs:
                student = sub.student.id
                grades = {g.name: g for nb in sub.notebooks for g in nb.grades}
                store_scores(dest, unit_name, cells, student,
                             {k: float(g.auto_score or 0.0) for k, g in grades.items()},
                             any(g.needs_manual_grade for g in grades.values()))
                merged.add(student)
    return merged


def write_gradebook(records: list[dict], unit, path: Path, parts: list[Path] = ()) -> None:
    """The course gradebook: the workers' gradebooks `parts` merged in, then any graded record none of them holds
    (a remote Dask worker's, or a worker whose gradebook failed) stored from the record itself, and every roster
    student created. Grade cells only: no cell sources (hidden tests)."""
    cells = grade_cells(unit)
    with open_gradebook(path) as gb:
        init_gradebook(gb, unit.name, cells)
        merged = merge_gradebooks(list(parts), gb, unit.name, cells)
        for record in records:
            gb.update_or_create_student(record["student"])
            if _scored(record) and record["student"] not in merged:
                store_record(gb, unit.name, cells, record)
        gb.db.commit()


def write_outputs(records: list[dict], unit, out: Path, gradebook: Path | None = None, parts: list[Path] = ()) -> None:
    """Write every output of one grading run into `out`; the scores go into `gradebook` (default out/gradebook.db),
    merged from the workers' own gradebooks `parts`."""
    out = Path(out)
    exercises = exercise_names(unit)
    write_csv(records, exercises, out / "grades.csv")
    with open(out / "results.jsonl", "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")
    write_feedback(records, unit.name, out / "feedback")
    write_summary(records, exercises, unit.name, out / "summary.html")
    try:
        write_gradebook(records, unit, Path(gradebook) if gradebook else out / "gradebook.db", parts)
    except Exception as err:  # noqa: BLE001 (the CSV and feedback are the primary outputs)
        (out / "gradebook.error.txt").write_text(f"could not write gradebook.db: {type(err).__name__}: {err}\n")
