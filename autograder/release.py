"""Build the student release: solutions/<U>/<U>.py (jupytext percent) -> nbgrader source -> course/<U>/<U>.ipynb.

    python -m autograder.release [--unit U ...] [--if-stale] [--check]

Each built notebook carries a stamp in its metadata (`infopt_release`): the hash of its inputs (the source file,
the unit's data files, RELEASE_FORMAT and the tool versions) and the hash of the notebook itself.
A unit is stale when either no longer matches, which catches both a changed source and a hand edit of course/.
Builds are deterministic: outputs cleared, cell ids derived from position/grade_id, JSON written canonically.
"""
from __future__ import annotations

import argparse
import copy
import datetime
import hashlib
import re
import shutil
import sys
import tempfile
from pathlib import Path

import nbformat

from autograder import nbgrader_course

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS, COURSE = REPO / "solutions", REPO / "course"
STAMP_KEY = "infopt_release"
# Bump when a change to this tool or to nbgrader_config.py changes the notebooks it builds: every release then
# reads as stale until rebuilt. (Hashing the tool's own bytes would make every unit stale on any edit.)
RELEASE_FORMAT = 1
EDITED = "was edited by hand"
GRADE_ID = re.compile(r"[a-z][a-z0-9_]*")
# jupytext's own per-cell metadata, dropped from the built notebook
JUPYTEXT_KEYS = {"lines_to_next_cell", "cell_marker", "title", "region_name", "lines_to_end_of_cell_marker",
                 "cell_depth", "comment_questions"}
USER_KEYS = {"solution", "grade_id", "points", "tags"}
MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION", "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")


class SourceError(ValueError):
    """A unit's source file breaks the authoring conventions; the message names the unit, the cell and the fix."""


def discover_units(solutions_dir: Path = SOLUTIONS) -> list[str]:
    """Units are the folders solutions/<U>/ holding a <U>.py source."""
    return sorted(p.parent.name for p in Path(solutions_dir).glob("*/*.py") if p.stem == p.parent.name)


def _where(unit: str, index: int, cell) -> str:
    first = next((ln for ln in cell.source.splitlines() if ln.strip()), "")[:60]
    return f"{unit}: cell {index} ({cell.cell_type}, starting {first!r})"


def _nbgrader_meta(kind: str, grade_id: str, points: int | None = None) -> dict:
    """nbgrader schema-3 metadata for a solution, test or locked read-only cell."""
    meta = {"grade": kind == "test", "grade_id": grade_id, "locked": kind != "solution", "schema_version": 3,
            "solution": kind == "solution", "task": False}
    if kind == "test":
        meta["points"] = points
    return meta


def build_source_notebook(unit: str, solutions_dir: Path = SOLUTIONS) -> nbformat.NotebookNode:
    """Read solutions/<U>/<U>.py and return the nbgrader *source* notebook (solutions and hidden tests kept)."""
    import jupytext

    path = Path(solutions_dir) / unit / f"{unit}.py"
    if not path.is_file():
        raise SourceError(f"{unit}: no source file {path}")
    nb = jupytext.read(path, fmt="py:percent")
    seen: set[str] = set()
    cells = []
    for i, cell in enumerate(nb.cells):
        meta = {k: v for k, v in cell.metadata.items() if k not in JUPYTEXT_KEYS}
        where = _where(unit, i, cell)
        unknown = set(meta) - USER_KEYS
        if unknown:
            raise SourceError(f"{where}: unknown cell metadata {sorted(unknown)}; a cell header may carry only "
                              f'solution=true, grade_id="<id>", points=<n> (e.g. `# %% grade_id="ex_test" points=2`)')
        gid = meta.get("grade_id")
        if gid is not None:
            if not isinstance(gid, str) or not GRADE_ID.fullmatch(gid):
                raise SourceError(f"{where}: grade_id {gid!r} must be lowercase letters, digits and '_'")
            if gid in seen:
                raise SourceError(f"{where}: grade_id {gid!r} is used twice; grade_ids must be unique")
            seen.add(gid)
        text = cell.source
        has_sol = "### BEGIN SOLUTION" in text or "### END SOLUTION" in text
        has_hidden = "### BEGIN HIDDEN TESTS" in text or "### END HIDDEN TESTS" in text
        new = copy.deepcopy(cell)
        new.metadata = {"tags": meta["tags"]} if "tags" in meta else {}
        if meta.get("solution") is True:
            if cell.cell_type != "code" or gid is None or "points" in meta:
                raise SourceError(f"{where}: a solution cell is a code cell with solution=true and a grade_id, "
                                  "and no points (points go on its <ex>_test cell)")
            if text.count("### BEGIN SOLUTION") != 1 or text.count("### END SOLUTION") != 1 or has_hidden:
                raise SourceError(f"{where}: a solution cell needs exactly one '### BEGIN SOLUTION' and one "
                                  "'### END SOLUTION' line (and no hidden tests)")
            new.metadata["nbgrader"] = _nbgrader_meta("solution", gid)
            new.id = gid
        elif "points" in meta:
            pts = meta["points"]
            if cell.cell_type != "code" or gid is None or not gid.endswith("_test") or "solution" in meta:
                raise SourceError(f"{where}: a test cell is a code cell with grade_id=\"<ex>_test\" and points=<n>")
            if type(pts) is not int or pts <= 0:
                raise SourceError(f"{where}: points must be a positive integer, got {pts!r}")
            if has_sol:
                raise SourceError(f"{where}: a test cell must not contain solution markers")
            new.metadata["nbgrader"] = _nbgrader_meta("test", gid, pts)
            new.id = gid.replace("_", "-")
        else:
            if gid is not None or "solution" in meta:
                raise SourceError(f"{where}: grade_id/solution given without the matching solution=true or points")
            if has_sol or has_hidden:
                raise SourceError(f"{where}: solution/hidden-test markers are only allowed in solution/test cells")
            new.id = f"cell-{i:03d}"
            if cell.cell_type == "markdown":
                new.metadata["nbgrader"] = _nbgrader_meta("locked", f"md_{i:03d}")
        if new.cell_type == "code":
            new.outputs, new.execution_count = [], None
        cells.append(new)
    if not cells:
        raise SourceError(f"{unit}: {path} has no cells")
    out = nbformat.v4.new_notebook()
    out.cells = cells
    out.metadata = {"kernelspec": dict(nb.metadata.get("kernelspec") or {
        "display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}),
        "language_info": {"name": "python"}}
    out.nbformat, out.nbformat_minor = 4, 5
    return out


def data_dir(unit: str, solutions_dir: Path = SOLUTIONS) -> Path:
    """A unit's data files (copied into the release as <U>/data/) live in solutions/<U>/data/."""
    return Path(solutions_dir) / unit / "data"


def _data_files(unit: str, solutions_dir: Path) -> list[Path]:
    d = data_dir(unit, solutions_dir)
    return sorted(p for p in d.rglob("*") if p.is_file()) if d.is_dir() else []


def inputs_hash(unit: str, solutions_dir: Path = SOLUTIONS) -> str:
    """Hash of everything a unit's release is built from: source, data files, RELEASE_FORMAT, tool versions."""
    import jupytext
    import nbgrader

    h = hashlib.sha256()
    parts = [("source", Path(solutions_dir) / unit / f"{unit}.py")]
    parts += [(f"data/{p.relative_to(data_dir(unit, solutions_dir))}", p) for p in _data_files(unit, solutions_dir)]
    for label, p in parts:
        h.update(label.encode() + b"\0" + p.read_bytes() + b"\0")
    h.update(f"format={RELEASE_FORMAT} nbgrader={nbgrader.__version__} jupytext={jupytext.__version__} "
             f"nbformat={nbformat.__version__}".encode())
    return h.hexdigest()


def _canonical(nb: nbformat.NotebookNode) -> str:
    """The notebook as JSON text, canonical (sorted keys, 1-space indent, trailing newline)."""
    return nbformat.writes(nb) + "\n" if not nbformat.writes(nb).endswith("\n") else nbformat.writes(nb)


def notebook_hash(nb: nbformat.NotebookNode) -> str:
    """Hash of a notebook's canonical text with its own stamp's notebook_sha256 blanked."""
    nb = copy.deepcopy(nb)
    nb.metadata.get(STAMP_KEY, {})["notebook_sha256"] = ""
    return hashlib.sha256(_canonical(nb).encode()).hexdigest()


def normalize_release(nb: nbformat.NotebookNode, unit: str, source_nb: nbformat.NotebookNode,
                      inputs: str) -> nbformat.NotebookNode:
    """Clear outputs, fix cell ids and notebook metadata, and stamp the release; deterministic."""
    nb = copy.deepcopy(nb)
    for i, cell in enumerate(nb.cells):
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        cell.id = (gid.replace("_", "-") if gid.endswith("_test") else gid) if gid and not gid.startswith("md_") \
            else f"cell-{i:03d}"
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cell.metadata.pop("execution", None)
    nb.metadata = {"kernelspec": source_nb.metadata["kernelspec"], "language_info": {"name": "python"},
                   STAMP_KEY: {"unit": unit, "source": f"solutions/{unit}/{unit}.py",
                               "note": "generated by `python -m autograder.release`; do not edit by hand",
                               "inputs_sha256": inputs, "notebook_sha256": ""}}
    nb.metadata[STAMP_KEY]["notebook_sha256"] = notebook_hash(nb)
    return nb


def build_release(unit: str, solutions_dir: Path = SOLUTIONS) -> tuple[nbformat.NotebookNode, dict[str, bytes]]:
    """Build a unit's release in a temp course root: (the release notebook, {relative path: bytes} of data files)."""
    source_nb = build_source_notebook(unit, solutions_dir)
    inputs = inputs_hash(unit, solutions_dir)
    with tempfile.TemporaryDirectory(prefix=f"release-{unit}-") as tmp:
        root = nbgrader_course.make_course_root(Path(tmp), unit, source_nb, data_dir(unit, solutions_dir))
        release_path = nbgrader_course.generate_assignment(root, unit, with_db=False)
        nb = nbformat.read(release_path, as_version=4)
        files = {str(p.relative_to(release_path.parent)): p.read_bytes()
                 for p in sorted(release_path.parent.rglob("*")) if p.is_file() and p != release_path}
    return normalize_release(nb, unit, source_nb, inputs), files


def stale_reason(unit: str, solutions_dir: Path = SOLUTIONS, course_dir: Path = COURSE) -> str | None:
    """Why course/<U> is out of date (None when it is current)."""
    path = Path(course_dir) / unit / f"{unit}.ipynb"
    if not path.is_file():
        return f"{path} is missing"
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as err:  # unreadable notebook
        return f"{path} is not a readable notebook ({err})"
    stamp = nb.metadata.get(STAMP_KEY, {})
    if stamp.get("inputs_sha256") != inputs_hash(unit, solutions_dir):
        return "its sources (or the release tool) changed since it was built"
    if stamp.get("notebook_sha256") != notebook_hash(nb) or path.read_text() != _canonical(nb):
        return f"{path} {EDITED}"
    for p in _data_files(unit, solutions_dir):
        rel = Path("data") / p.relative_to(data_dir(unit, solutions_dir))
        target = Path(course_dir) / unit / rel
        if not target.is_file() or target.read_bytes() != p.read_bytes():
            return f"data file {rel} is missing or differs"
    return None


def write_release(unit: str, solutions_dir: Path = SOLUTIONS, course_dir: Path = COURSE) -> Path:
    """Build a unit and write course/<U>/ (a hand-edited notebook is first saved to <course>/../build/release-backups/)."""
    nb, files = build_release(unit, solutions_dir)
    out_dir = Path(course_dir) / unit
    path = out_dir / f"{unit}.ipynb"
    if path.is_file():
        try:
            old = nbformat.read(path, as_version=4)
            edited = old.metadata.get(STAMP_KEY, {}).get("notebook_sha256") != notebook_hash(old)
        except Exception:
            edited = True
        if edited:
            backups = Path(course_dir).resolve().parent / "build" / "release-backups"
            backups.mkdir(parents=True, exist_ok=True)
            when = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S")
            backup = backups / f"{unit}-{when}.ipynb"
            shutil.copyfile(path, backup)
            print(f"release: {path} had been edited; your copy is saved as {backup}")
    out_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(_canonical(nb))
    for rel, data in files.items():
        target = out_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return path


def main(argv: list[str] | None = None) -> int:
    """Command line: rebuild all (or --unit) units, or only stale ones (--if-stale), or just report (--check)."""
    ap = argparse.ArgumentParser(prog="python -m autograder.release", description=__doc__.split("\n")[0])
    ap.add_argument("--unit", action="append", help="unit folder name (repeatable); default: every unit")
    ap.add_argument("--if-stale", action="store_true", help="rebuild only the units whose release is stale")
    ap.add_argument("--check", action="store_true", help="build nothing; exit 1 naming the stale units")
    ap.add_argument("--solutions", type=Path, default=SOLUTIONS, help=argparse.SUPPRESS)
    ap.add_argument("--course", type=Path, default=COURSE, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    units = discover_units(args.solutions)
    for u in args.unit or []:
        if u not in units:
            ap.error(f"unknown unit {u!r}; units with a solutions/<U>/<U>.py: {', '.join(units) or 'none'}")
    units = args.unit or units
    if args.check or args.if_stale:
        stale = {u: r for u in units if (r := stale_reason(u, args.solutions, args.course))}
        if args.check:
            if not args.unit:  # a course/<X>/<X>.ipynb whose source is gone
                stale.update({p.parent.name: "no solutions/<U>/<U>.py builds it (delete course/<U>/)"
                              for p in sorted(Path(args.course).glob("*/*.ipynb"))
                              if p.stem == p.parent.name and p.stem not in units})
            for u, r in stale.items():
                print(f"stale: {u}: {r}", file=sys.stderr)
            if stale:
                print(f"release: {len(stale)} stale unit(s): {' '.join(stale)}; run `make release`", file=sys.stderr)
                return 1
            print(f"release: {len(units)} unit(s) up to date")
            return 0
        for u, r in list(stale.items()):
            if r.endswith(EDITED):  # sources unchanged: this is someone's work (a student's), keep it
                print(f"release: {u}: keeping your edited {args.course.name}/{u}/{u}.ipynb (its sources did not "
                      f"change); `make release UNIT={u}` replaces it, saving your copy under build/release-backups/")
                del stale[u]
        units = list(stale)
    failed = []
    for u in units:
        try:
            path = write_release(u, args.solutions, args.course)
        except (SourceError, nbgrader_course.NbgraderFailed) as err:
            print(f"release: {u}: {err}", file=sys.stderr)
            failed.append(u)
            continue
        shown = path.relative_to(args.course.parent) if path.is_relative_to(args.course.parent) else path
        print(f"release: wrote {shown}")
    if not units:
        print("release: everything up to date")
    if failed:
        print(f"release: FAILED for {' '.join(failed)}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
