"""Intake: find each student's submission, take only the expected notebook, check it, restore grading metadata.

Accepts an nbgrader `submitted/` tree (`<student>/<unit>/<unit>.ipynb`) or a folder of LMS uploads (one
`.ipynb`, zip or tar archive, or folder per student, named by the student id, optionally followed by
`_anything`). Only the notebook reaches the grader; no other file a student shipped does. A submission that cannot
be graded gets a status and a message, never a silent zero.

Only the student's own files are graded: a symbolic link anywhere between the submissions folder and the notebook
(the student's folder, the unit folder, the notebook) or anywhere inside the student's upload is refused for that
student, as is a notebook whose real path leaves the submissions folder, and an archive with links, absolute paths
or `..` in it. A notebook with more than one hard link, and notebooks byte-identical across students, are graded
but flagged for review.
"""
from __future__ import annotations

import concurrent.futures
import csv
import dataclasses
import hashlib
import io
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from .archives import ARCHIVE_SUFFIXES, UnsafeArchive, is_archive, members, read_member

MAX_NOTEBOOK_BYTES = 64 * 1024 * 1024
MAX_NESTING = 64  # JSON levels; a real notebook has about 6 (outputs' data in a cell in the notebook)
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
    flags: list[str] = dataclasses.field(default_factory=list)    # graded, but an instructor should look
    digest: str = ""                                              # sha256 of the notebook's bytes


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
    except RecursionError:
        return None, (f"notebook JSON nests deeper than Python can read (a notebook nests about 6 levels); "
                      "its metadata or outputs were damaged or built by hand")
    if nesting(nb, MAX_NESTING) > MAX_NESTING:
        return None, (f"notebook JSON nests more than {MAX_NESTING} levels deep (a notebook nests about 6); "
                      "its metadata or outputs were damaged or built by hand")
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


def nesting(value: object, limit: int) -> int:
    """How deep lists and dicts nest in `value` (a scalar is 0), counting no further than `limit` + 1; no recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth)
            if depth > limit:
                return depth
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def _link_on_path(root: Path, path: Path) -> str | None:
    """The first component from `root` down to `path` that is a symbolic link (relative to root), or None."""
    current = root
    for part in path.relative_to(root).parts:
        current = current / part
        if current.is_symlink():
            return str(current.relative_to(root))
    return None


def _links_inside(folder: Path) -> list[str]:
    """Symbolic links anywhere under `folder` (never followed), relative to it."""
    found = []
    for here, dirs, files in os.walk(folder, followlinks=False):
        for name in dirs + files:
            if os.path.islink(os.path.join(here, name)):
                found.append(str(Path(here, name).relative_to(folder)))
    return sorted(found)


def _refusal(root: Path, path: Path) -> str:
    """Why `path` (under `root`) is not the student's own files, or ''."""
    link = _link_on_path(root, path)
    if link:
        target = os.readlink(root / link)
        return (f"{link} is a symbolic link (to {target}); only the student's own files are graded: upload the "
                "files themselves")
    if path.is_dir():
        inside = _links_inside(path)
        if inside:
            return (f"the upload holds symbolic links ({', '.join(inside[:3])}); only the student's own files are "
                    "graded: upload the files themselves")
    return ""


def _read_capped(path: Path) -> bytes:
    with open(path, "rb") as handle:
        return handle.read(MAX_NOTEBOOK_BYTES + 1)


def _under(root: Path, path: Path) -> bool:
    return os.path.realpath(path).startswith(os.path.realpath(root).rstrip("/") + "/")


def _hard_link_flag(path: Path) -> list[str]:
    links = os.lstat(path).st_nlink
    return ([f"{path.name} has {links} hard links (the same file as another upload, or linked from elsewhere); "
             "check whose work it is before trusting the grade"] if links > 1 else [])


def _read_upload(path: Path, unit: str, shipped: list[str], root: Path,
                 flags: list[str]) -> tuple[bytes | None, str, str]:
    """(notebook bytes, origin, note or error) from one upload: a notebook, an archive or a folder.

    The names of the upload's other files are appended to `shipped` (they are never copied anywhere); hard-link
    findings to `flags`."""
    refusal = _refusal(root, path)
    if refusal:
        return None, str(path), refusal
    if path.is_dir():
        names = [str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()]
        chosen, note = _pick(names, unit)
        shipped.extend(n for n in names if n != chosen and not any(p in n for p in _IGNORED_PARTS))
        if chosen is None:
            return None, str(path), note
        target = path / chosen
        if not _under(root, target):
            return None, str(path), f"{chosen} resolves outside the submissions folder; it is not the student's file"
        flags.extend(_hard_link_flag(target))
        return _read_capped(target), str(target), note
    if is_archive(path):
        try:
            found = members(path)
        except UnsafeArchive as err:
            return None, str(path), str(err)
        chosen, note = _pick(list(found), unit)
        shipped.extend(n for n in found if n != chosen and not any(p in n for p in _IGNORED_PARTS))
        if chosen is None:
            return None, str(path), note + " in the archive"
        if found[chosen] > MAX_NOTEBOOK_BYTES:
            return None, str(path), f"{chosen} in the archive is over {MAX_NOTEBOOK_BYTES // 2**20} MB"
        flags.extend(_hard_link_flag(path))
        try:
            return read_member(path, chosen, MAX_NOTEBOOK_BYTES), f"{path}:{chosen}", note
        except Exception as err:  # noqa: BLE001 (a bad CRC, a truncated stream, a damaged header: all unreadable)
            return None, str(path), f"upload is not a readable archive ({type(err).__name__}: {err})"
    if path.suffix == ".ipynb":
        if not _under(root, path):
            return None, str(path), "the notebook resolves outside the submissions folder; it is not the student's file"
        flags.extend(_hard_link_flag(path))
        return _read_capped(path), str(path), ""
    return None, str(path), f"upload {path.name} is neither a notebook, an archive (zip/tar) nor a folder"


def _stem(name: str) -> str:
    """An upload's name without its notebook or archive suffix (`bo_2.tar.gz` -> `bo_2`)."""
    low = name.lower()
    for suffix in sorted((".ipynb",) + ARCHIVE_SUFFIXES, key=len, reverse=True):
        if low.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _student_of(name: str, roster: list[str] | None) -> str:
    """The student id an LMS upload belongs to: the longest roster id it starts with, else its stem up to '_'."""
    stem = _stem(name)
    if roster:
        matches = [r for r in roster if stem == r or re.match(re.escape(r) + r"[_\-. ]", stem)]
        if matches:
            return max(matches, key=len)
    return safe_id(stem.split("_")[0] if "_" in stem else stem)


def find_submissions(root: Path, unit: str, roster: list[str] | None = None, limits: IntakeLimits | None = None,
                     isolate: bool = True, workers: int | None = None) -> dict[str, Submission]:
    """One Submission per student (roster first, in order, then unlisted submitters) from `root`.

    Each upload is read by a process of its own under `limits` (default IntakeLimits()), `workers` at once;
    `isolate=False` reads them in this process (still one failure per student, but without the limits)."""
    limits = limits or IntakeLimits()
    root = Path(os.path.realpath(root))  # the instructor's own folder may be a link; nothing below it may be
    if not root.is_dir():
        raise FileNotFoundError(f"submissions folder {root} does not exist")
    if (root / "submitted").is_symlink():
        raise ValueError(f"{root / 'submitted'} is a symbolic link; pass the real submissions folder instead")
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
        elif entry.is_dir() or entry.suffix == ".ipynb" or is_archive(entry):
            uploads.setdefault(_student_of(entry.name, roster), []).append(entry)
    students = list(roster or []) + sorted(s for s in uploads if not roster or s not in roster)
    found: dict[str, Submission] = {}
    for student in students:
        if not uploads.get(student):
            found[student] = Submission(student, "missing", "no submission")
    pending = [s for s in students if s not in found]
    read = (lambda s: read_isolated(s, uploads[s], unit, root, limits)) if isolate else (
        lambda s: read_submission(s, uploads[s], unit, root))
    with concurrent.futures.ThreadPoolExecutor(max(1, min(workers or os.cpu_count() or 1, len(pending) or 1))) as pool:
        for student, sub in zip(pending, pool.map(read, pending)):
            found[student] = sub
    found = {student: found[student] for student in students}
    for student in students:
        if roster and student not in roster:
            found[student].notes.append("student is not on the roster")
    _flag_identical(found)
    return found


def read_submission(student: str, paths: list[Path], unit: str, root: Path) -> Submission:
    """One student's Submission from their uploads (the latest is graded); never raises: a failure is their error."""
    try:
        paths = sorted(paths, key=lambda p: p.lstat().st_mtime)
        shipped: list[str] = []
        flags: list[str] = []
        data, origin, note = _read_upload(paths[-1], unit, shipped, root, flags)
        notes = [note] if note and data is not None else []
        if shipped:
            notes.append(f"ignored {len(shipped)} other file(s) in the upload: {', '.join(sorted(shipped)[:5])}")
        if len(paths) > 1:
            notes.append(f"{len(paths)} uploads; graded the latest, {paths[-1].name}")
        if data is None:
            return Submission(student, "error", note, origin=origin)
        nb, error = parse_notebook(data)
        if nb is None:
            return Submission(student, "error", error, origin=origin, notes=notes)
        return Submission(student, "ok", "", nb, origin, notes, shipped, flags, hashlib.sha256(data).hexdigest())
    except MemoryError:
        return Submission(student, "error", "reading the upload needed more memory than the grader allows (a zip "
                          "bomb, or a notebook far too large)", origin=str(paths[-1]) if paths else "")
    except Exception as err:  # noqa: BLE001 (an upload nothing above foresaw is this student's error, not the batch's)
        return Submission(student, "error", f"the upload could not be read ({type(err).__name__}: {err}); "
                          "ask the student to upload the notebook again", origin=str(paths[-1]) if paths else "")


@dataclasses.dataclass(frozen=True)
class IntakeLimits:
    """Limits on the process that reads one upload: address space, CPU seconds and wall seconds."""

    memory_mb: int = 2048
    cpu_s: int = 60
    wall_s: float = 120.0


def read_isolated(student: str, paths: list[Path], unit: str, root: Path, limits: IntakeLimits) -> Submission:
    """read_submission in a process of its own under `limits` (autograder.intake_child), so that an upload that
    exhausts memory or time, or crashes the reader, costs only its own student."""
    request = json.dumps({"student": student, "paths": [str(p) for p in paths], "unit": unit, "root": str(root),
                          "limits": dataclasses.asdict(limits)})
    origin = str(paths[-1]) if paths else ""
    try:
        done = subprocess.run([sys.executable, "-m", "autograder.intake_child"], input=request.encode(),
                              capture_output=True, timeout=limits.wall_s, cwd=Path(__file__).resolve().parent.parent,
                              env={"PATH": os.environ.get("PATH", ""), "PYTHONDONTWRITEBYTECODE": "1"})
    except subprocess.TimeoutExpired:
        return Submission(student, "error", f"reading the upload took over {limits.wall_s:g} s and was stopped "
                          "(a file that never ends, or an archive built to be slow to open)", origin=origin)
    if done.returncode != 0:
        how = (f"killed by signal {-done.returncode}" if done.returncode < 0 else f"exit code {done.returncode}")
        cause = f"after {limits.cpu_s} s of CPU" if done.returncode == -signal.SIGXCPU else f"({how})"
        return Submission(student, "error", f"reading the upload was stopped {cause}: a damaged or hostile archive "
                          f"or notebook (limits: {limits.memory_mb} MB, {limits.cpu_s} CPU s)", origin=origin)
    try:
        return Submission(**json.loads(done.stdout))
    except (ValueError, TypeError) as err:
        return Submission(student, "error", f"the process that read the upload gave no usable answer ({err})",
                          origin=origin)


def _flag_identical(found: dict[str, Submission]) -> None:
    """Flag every graded notebook that is byte-identical to another student's."""
    by_digest: dict[str, list[str]] = {}
    for sub in found.values():
        if sub.status == "ok" and sub.digest:
            by_digest.setdefault(sub.digest, []).append(sub.student)
    for students in by_digest.values():
        for student in students if len(students) > 1 else ():
            others = [s for s in students if s != student]
            found[student].flags.append(f"the notebook is byte-identical to the one of {', '.join(others[:5])}"
                                        + (f" and {len(others) - 5} more" if len(others) > 5 else "")
                                        + "; check whose work it is before trusting the grade")
