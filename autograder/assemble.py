"""Build the notebook the grader runs: the student's cells, with grading cells and metadata restored from the source.

The source of truth is the instructor's file `solutions/<unit>/<unit>.py` (jupytext percent, cells marked
`solution=true grade_id=...` or `grade_id=... points=n`). Whatever a student did to metadata (another
schema_version, edited points, flags removed), each graded cell is found again by grade_id or by the release's
cell id; test cells and read-only cells get the instructor's source back (hidden tests included); deleted graded
cells are put back where they were (nbgrader's add_missing_cells); cells the student added run as plain code.
"""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

_BEGIN_SOLUTION, _END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"
_BEGIN_HIDDEN, _END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
_GRADE_ID = re.compile(r"^[a-z0-9_]+$")


@dataclasses.dataclass
class MasterCell:
    """One cell of the instructor's source: kind markdown|code|solution|test|manual|readonly, grade_id, points."""

    kind: str
    source: str
    grade_id: str | None = None
    points: float = 0.0
    cell_id: str | None = None
    cell_type: str = "code"  # "markdown" for a locked markdown cell (kind readonly): it is text, never run

    @property
    def graded(self) -> bool:
        """True for cells the grader must find again in every submission."""
        return self.grade_id is not None

    def hidden_lines(self) -> tuple[int, int] | None:
        """1-based (first, last) line numbers of the hidden-test block, or None when there is none."""
        lines = self.source.splitlines()
        starts = [i for i, line in enumerate(lines, 1) if line.strip() == _BEGIN_HIDDEN]
        ends = [i for i, line in enumerate(lines, 1) if line.strip() == _END_HIDDEN]
        return (starts[0], ends[-1] if ends else len(lines)) if starts else None

    def visible_source(self) -> str:
        """The source a student sees in the release: hidden tests removed, solutions replaced by a stub."""
        out, skip = [], None
        for line in self.source.splitlines():
            stripped = line.strip()
            if stripped in (_BEGIN_HIDDEN, _BEGIN_SOLUTION):
                skip = stripped
                if stripped == _BEGIN_SOLUTION:
                    indent = line[: len(line) - len(line.lstrip())]
                    out += [indent + "# YOUR CODE HERE", indent + "raise NotImplementedError()"]
                continue
            if skip and stripped in (_END_HIDDEN, _END_SOLUTION):
                skip = None
                continue
            if not skip:
                out.append(line)
        return "\n".join(out)


def _cell_kind(meta: dict, cell_type: str) -> tuple[str, str | None, float, bool]:
    """(kind, grade_id, points, locked) from jupytext flat keys or nbgrader metadata."""
    nbg = meta.get("nbgrader") if isinstance(meta.get("nbgrader"), dict) else meta
    solution, grade = bool(nbg.get("solution")), bool(nbg.get("grade"))
    grade_id = nbg.get("grade_id")
    points = float(nbg.get("points", 0) or 0)
    if "nbgrader" not in meta and grade_id and not solution:
        grade = True  # percent-file convention: `grade_id="x_test" points=n` marks a test cell
    locked = bool(nbg.get("locked"))
    if solution and grade:
        return "manual", grade_id, points, False
    if solution:
        return "solution", grade_id, 0.0, False
    if grade and cell_type == "code":
        return "test", grade_id, points, True
    if grade or locked:
        return "readonly", grade_id, points, True
    return ("markdown" if cell_type != "code" else "code"), None, 0.0, False


def master_from_cells(cells: list[dict]) -> list[MasterCell]:
    """MasterCells from notebook-like cells (dicts with cell_type, source, metadata, optional id)."""
    master: list[MasterCell] = []
    seen: set[str] = set()
    for number, cell in enumerate(cells):
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        kind, grade_id, points, _ = _cell_kind(cell.get("metadata", {}) or {}, cell.get("cell_type", "code"))
        if grade_id is not None:
            if not isinstance(grade_id, str) or not _GRADE_ID.match(grade_id):
                raise ValueError(f"source cell {number}: grade_id {grade_id!r} must be lowercase letters, digits, _")
            if grade_id in seen:
                raise ValueError(f"source cell {number}: grade_id {grade_id!r} is used twice")
            seen.add(grade_id)
        if kind == "test" and points <= 0:
            raise ValueError(f"source cell {number} ({grade_id}): a test cell needs points > 0")
        cell_type = "markdown" if cell.get("cell_type", "code") != "code" else "code"
        master.append(MasterCell(kind, source, grade_id, points, cell.get("id"), cell_type))
    if not any(c.kind == "test" for c in master):
        raise ValueError("the source notebook has no test cells with points; nothing to grade")
    return master


def load_master(path: Path) -> list[MasterCell]:
    """The instructor's cells from a jupytext percent file (`solutions/<unit>/<unit>.py`) or a source .ipynb."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"source notebook {path} does not exist (expected solutions/<unit>/<unit>.py)")
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    else:
        import jupytext

        cells = [dict(c) for c in jupytext.read(str(path))["cells"]]
    return master_from_cells(cells)


def release_ids(release: dict | None) -> dict[str, str]:
    """Map release cell id -> grade_id, to find graded cells whose nbgrader metadata a student deleted."""
    found: dict[str, str] = {}
    for cell in (release or {}).get("cells", []):
        grade_id = (cell.get("metadata", {}).get("nbgrader") or {}).get("grade_id")
        if grade_id and cell.get("id"):
            found[cell["id"]] = grade_id
    return found


@dataclasses.dataclass
class GradedCell:
    """A cell of the notebook the grader runs: kind, source, grade_id, points, and who wrote it."""

    kind: str
    source: str
    grade_id: str | None = None
    points: float = 0.0
    author: str = "student"  # student | instructor
    hidden: tuple[int, int] | None = None


def _norm(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def assemble(nb: dict, master: list[MasterCell], release: dict | None = None) -> tuple[list[GradedCell], list[str]]:
    """The cells to run for one student notebook, and notes on what was restored (edited, deleted, duplicated)."""
    by_id = {c.grade_id: c for c in master if c.graded}
    id_map = release_ids(release)
    stubs = {}
    for cell in (release or {}).get("cells", []):
        grade_id = (cell.get("metadata", {}).get("nbgrader") or {}).get("grade_id")
        if grade_id:
            source = cell.get("source", "")
            stubs[grade_id] = "".join(source) if isinstance(source, list) else source
    instructor_code = {_norm(c.source) for c in master if c.kind == "code"}
    out: list[GradedCell] = []
    notes: list[str] = []
    seen: set[str] = set()
    for cell in nb["cells"]:
        meta = cell.get("metadata", {})
        nbg = meta.get("nbgrader") if isinstance(meta.get("nbgrader"), dict) else {}
        grade_id = nbg.get("grade_id") if isinstance(nbg.get("grade_id"), str) else None
        if grade_id not in by_id and cell.get("id") in id_map:
            grade_id = id_map[cell["id"]]
            if grade_id in by_id and by_id[grade_id].kind != "readonly":
                notes.append(f"cell {grade_id}: its grading metadata was missing or wrong; restored from the release")
        source = cell["source"]
        if grade_id in by_id and grade_id not in seen:
            seen.add(grade_id)
            m = by_id[grade_id]
            if nbg and (nbg.get("schema_version", 3) != 3 or float(nbg.get("points", m.points) or 0) != m.points):
                notes.append(f"cell {grade_id}: edited nbgrader metadata (schema_version/points) ignored")
            if m.kind in ("solution", "manual"):
                if cell["cell_type"] != ("code" if m.kind == "solution" else cell["cell_type"]):
                    notes.append(f"cell {grade_id}: changed to a {cell['cell_type']} cell; graded as empty")
                    source = stubs.get(grade_id, m.visible_source())
                out.append(GradedCell(m.kind, source, grade_id, m.points, "student"))
            else:
                if m.kind == "test" and _norm(source) != _norm(stubs.get(grade_id, m.visible_source())):
                    notes.append(f"cell {grade_id}: the student edited this read-only cell; restored the original")
                # a locked cell keeps the type of the source: a text cell turned into code is not run
                kind = "markdown" if m.kind == "readonly" and (m.cell_type == "markdown" or cell["cell_type"] != "code") \
                    else m.kind
                out.append(GradedCell(kind, m.source, grade_id, m.points, "instructor", m.hidden_lines()))
            continue
        if grade_id in seen:
            notes.append(f"cell {grade_id} appears twice; the copy runs as plain code and earns nothing")
        if cell["cell_type"] != "code":
            out.append(GradedCell("markdown", source))
        else:
            author = "instructor" if _norm(source) in instructor_code else "student"
            out.append(GradedCell("code", source, author=author))
    # Put back graded cells the student deleted, before the next graded cell that is still there.
    order = [c.grade_id for c in master if c.graded]
    for position, grade_id in enumerate(order):
        if grade_id in seen:
            continue
        m = by_id[grade_id]
        later = [g for g in order[position + 1:] if g in seen]
        at = next((i for i, c in enumerate(out) if c.grade_id == later[0]), len(out)) if later else len(out)
        if m.kind in ("solution", "manual"):
            cell = GradedCell(m.kind, stubs.get(grade_id, m.visible_source()), grade_id, m.points, "instructor")
            notes.append(f"cell {grade_id} was deleted; put back as the empty exercise (its tests will fail)")
        else:
            code = m.kind == "test" or (m.kind == "readonly" and m.cell_type == "code")
            kind = m.kind if code else "markdown"  # a deleted locked code cell runs again, as the instructor's
            cell = GradedCell(kind, m.source, grade_id, m.points, "instructor", m.hidden_lines())
            if code:
                notes.append(f"cell {grade_id} was deleted; put back from the source")
        out.insert(at, cell)
        seen.add(grade_id)
    return out, notes


def exercise_of(test_id: str) -> str:
    """The exercise a test cell belongs to: grade_id `<ex>_test` -> `<ex>`."""
    return test_id[: -len("_test")] if test_id.endswith("_test") else test_id


def _strip_markers(source: str) -> str:
    return "\n".join(line for line in source.splitlines() if line.strip() not in (_BEGIN_SOLUTION, _END_SOLUTION))


def release_notebook(master: list[MasterCell], solved: bool = False) -> dict:
    """An nbformat-4 notebook like the release (nbgrader metadata, stubs); `solved=True`: an honest submission."""
    cells = []
    for number, m in enumerate(master):
        cell_type = "markdown" if m.kind == "markdown" or m.cell_type == "markdown" else "code"
        source = m.visible_source()
        if solved and m.kind in ("solution", "manual"):
            source = _strip_markers(m.source)
        cell = {"cell_type": cell_type, "id": m.cell_id or f"cell-{number}", "metadata": {}, "source": source}
        if cell_type == "code":
            cell.update(outputs=[], execution_count=None)
        if m.graded:
            cell["metadata"]["nbgrader"] = {
                "grade": m.kind in ("test", "manual"), "solution": m.kind in ("solution", "manual"),
                "locked": m.kind in ("test", "readonly"), "grade_id": m.grade_id, "schema_version": 3,
                **({"points": m.points} if m.kind in ("test", "manual") else {})}
        cells.append(cell)
    return {"cells": cells, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                                        "language": "python"}},
            "nbformat": 4, "nbformat_minor": 5}
