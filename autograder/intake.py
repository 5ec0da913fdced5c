"""Intake: find each student's submission, take only the expected notebook, check it, restore grading metadata.

Accepts an nbgrader `submitted/` tree (`<student>/<unit>/<unit>.ipynb`) or a folder of LMS uploads (one
`.ipynb`, `.zip` or folder per student, named by the student id, optionally followed by `_anything`). Only the
notebook reaches the grader; no other file a student shipped does. A submission that cannot be graded gets a
status and a message, never a silent zero.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
import zipfile
from pathlib import Path

MAX_NOTEBOOK_BYTES = 64 * 1024 * 1024
_ID_CHARS = re.compile(r"[^A-Za-z0-9._@+-]")
_IGNORED_PARTS = ("__MACOSX", ".ipynb_checkpoints")


@dataclasses.dataclass
class Submission:
    """One student's intake result: status ok|missing|error, the parsed notebook (ok only), message and notes."""

    student: str
    status: str
    message: str = ""
    notebook: dict | None = None
    origin: str = ""
    notes: list[str] = dataclasses.field(default_factory=list)
    shipped: list[str] = dataclasses.field(default_factory=list)  # other files in the upload (never used)


def safe_id(raw: str) -> str:
    """A student id safe to use in file names (letters, digits, . _ @ + -), never starting with a dot."""
    cleaned = _ID_CHARS.sub("_", raw.strip()).lstrip(".")
    if not cleaned:
        raise ValueError(f"student id {raw!r} has no usable characters")
    return cleaned


def load_roster(path: Path) -> list[str]:
    """Student ids from a roster CSV (column id, student_id, student or username; else the first column)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"roster {path} does not exist; pass a CSV with one student id per row")
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8-sig"))))
    rows = [row for row in rows if row and any(cell.strip() for cell in row)]
    if not rows:
        raise ValueError(f"roster {path} is empty")
    header = [cell.strip().lower() for cell in rows[0]]
    column = next((header.index(name) for name in ("id", "student_id", "student", "username") if name in header),
                  None)
    body = rows[1:] if column is not None else rows
    ids = [safe_id(row[column or 0]) for row in body if len(row) > (column or 0) and row[column or 0].strip()]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"roster {path} lists these ids more than once: {', '.join(duplicates)}")
    return ids


def _notebook_names(names: list[str]) -> list[str]:
    return [n for n in names if n.endswith(".ipynb") and not any(p in n for p in _IGNORED_PARTS)
            and not Path(n).name.startswith(".")]


def _pick(names: list[str], unit: str) -> tuple[str | None, str]:
    """The notebook to grade among `names` (paths): `<unit>.ipynb` first, else the only notebook there is."""
    notebooks = _notebook_names(names)
    exact = sorted((n for n in notebooks if Path(n).name == f"{unit}.ipynb"), key=lambda n: n.count("/"))
    if exact:
        return exact[0], ""
    if len(notebooks) == 1:
        return notebooks[0], f"notebook was renamed to {Path(notebooks[0]).name!r}; graded it as {unit}.ipynb"
    if not notebooks:
        return None, f"no notebook found (expected {unit}.ipynb)"
    return None, (f"found {len(notebooks)} notebooks, none named {unit}.ipynb: "
                  + ", ".join(sorted(Path(n).name for n in notebooks)[:5]))


def parse_notebook(data: bytes) -> tuple[dict | None, str]:
    """Check raw bytes are a gradeable notebook (size, UTF-8 JSON, nbformat 4, well-formed cells); (nb, error)."""
    if len(data) > MAX_NOTEBOOK_BYTES:
        return None, f"notebook is {len(data) // 2**20} MB, over the {MAX_NOTEBOOK_BYTES // 2**20} MB limit"
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        return None, f"notebook is not UTF-8 text ({err.reason} at byte {err.start})"
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as err:
        return None, f"notebook is not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}"
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        return None, "notebook JSON has no list of cells (is this an .ipynb file?)"
    if nb.get("nbformat") != 4:
        return None, (f"notebook has nbformat {nb.get('nbformat')!r}; only nbformat 4 can be graded "
                      "(open it in JupyterLab and save it again)")
    for number, cell in enumerate(nb["cells"]):
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw"):
            return None, f"cell {number} is malformed (no valid cell_type)"
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            source = "".join(source)
        if not isinstance(source, str):
            return None, f"cell {number} has a malformed source (not text)"
        cell["source"] = source
        if not isinstance(cell.get("metadata"), dict):
            cell["metadata"] = {}
        cell["outputs"] = []
    return nb, ""


def _read_upload(path: Path, unit: str, shipped: list[str]) -> tuple[bytes | None, str, str]:
    """(notebook bytes, origin, note or error) from one upload: a notebook, a zip or a folder.

    The names of the upload's other files are appended to `shipped` (they are never copied anywhere).
    """
    if path.is_dir():
        names = [str(p.relative_to(path)) for p in path.rglob("*") if p.is_file() or p.is_symlink()]
        chosen, note = _pick(names, unit)
        shipped.extend(n for n in names if n != chosen and not any(p in n for p in _IGNORED_PARTS))
        if chosen is None:
            return None, str(path), note
        if (path / chosen).is_symlink():
            return None, str(path), f"{chosen} is a symbolic link; upload the notebook file itself"
        return (path / chosen).read_bytes(), str(path / chosen), note
    if path.suffix == ".zip":
        try:
            with zipfile.ZipFile(path) as archive:
                infos = {i.filename: i for i in archive.infolist() if not i.is_dir()}
                chosen, note = _pick(list(infos), unit)
                shipped.extend(n for n in infos if n != chosen and not any(p in n for p in _IGNORED_PARTS))
                if chosen is None:
                    return None, str(path), note + " in the zip"
                if infos[chosen].file_size > MAX_NOTEBOOK_BYTES:
                    return None, str(path), f"{chosen} in the zip is over {MAX_NOTEBOOK_BYTES // 2**20} MB"
                with archive.open(infos[chosen]) as handle:
                    return handle.read(MAX_NOTEBOOK_BYTES + 1), f"{path}:{chosen}", note
        except (zipfile.BadZipFile, OSError, RuntimeError) as err:
            return None, str(path), f"upload is not a readable zip file ({err})"
    if path.suffix == ".ipynb":
        return path.read_bytes(), str(path), ""
    return None, str(path), f"upload {path.name} is neither a notebook, a zip nor a folder"


def _student_of(name: str, roster: list[str] | None) -> str:
    """The student id an LMS upload belongs to: the longest roster id it starts with, else its stem up to '_'."""
    stem = name[: -len(Path(name).suffix)] if Path(name).suffix in (".ipynb", ".zip") else name
    if roster:
        matches = [r for r in roster if stem == r or re.match(re.escape(r) + r"[_\-. ]", stem)]
        if matches:
            return max(matches, key=len)
    return safe_id(stem.split("_")[0] if "_" in stem else stem)


def find_submissions(root: Path, unit: str, roster: list[str] | None = None) -> dict[str, Submission]:
    """One Submission per student (roster first, in order, then unlisted submitters) from `root`."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"submissions folder {root} does not exist")
    if (root / "submitted").is_dir():
        root = root / "submitted"
    entries = sorted(p for p in root.iterdir() if not p.name.startswith(".") and p.name not in _IGNORED_PARTS)
    nbgrader_tree = any((p / unit).is_dir() for p in entries if p.is_dir())
    uploads: dict[str, list[Path]] = {}
    for entry in entries:
        if nbgrader_tree:
            if entry.is_dir():
                uploads.setdefault(safe_id(entry.name), []).append(entry / unit if (entry / unit).is_dir()
                                                                  else entry)
        elif entry.is_dir() or entry.suffix in (".ipynb", ".zip"):
            uploads.setdefault(_student_of(entry.name, roster), []).append(entry)
    students = list(roster or []) + sorted(s for s in uploads if not roster or s not in roster)
    found: dict[str, Submission] = {}
    for student in students:
        paths = uploads.get(student)
        if not paths:
            found[student] = Submission(student, "missing", "no submission")
            continue
        paths = sorted(paths, key=lambda p: p.stat().st_mtime)
        shipped: list[str] = []
        data, origin, note = _read_upload(paths[-1], unit, shipped)
        notes = [note] if note and data is not None else []
        if shipped:
            notes.append(f"ignored {len(shipped)} other file(s) in the upload: {', '.join(sorted(shipped)[:5])}")
        if len(paths) > 1:
            notes.append(f"{len(paths)} uploads; graded the latest, {paths[-1].name}")
        if data is None:
            found[student] = Submission(student, "error", note, origin=origin)
            continue
        nb, error = parse_notebook(data)
        if nb is None:
            found[student] = Submission(student, "error", error, origin=origin, notes=notes)
        else:
            found[student] = Submission(student, "ok", "", nb, origin, notes, shipped)
        if roster and student not in roster:
            found[student].notes.append("student is not on the roster")
    return found
