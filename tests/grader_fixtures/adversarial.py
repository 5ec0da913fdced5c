"""The committed adversarial submissions: each case is a recipe applied to a unit's release, with its expected grade.

Recipes, not frozen .ipynb files, so the set follows the unit's notebook as it changes: every case starts from the
honest submission (the release with the source's solutions filled in) or the empty release and adds one hostile
or broken thing. `materialize(unit, folder)` writes an LMS-style upload folder (one file or zip per student) and a
roster; `CASES` says what each student must get. Snippets may use {func} (the first function the target solution
cell defines), {repo} and {unit}.
"""
from __future__ import annotations

import ast
import copy
import dataclasses
import io
import json
import zipfile
from pathlib import Path

from autograder.assemble import MasterCell, release_notebook

DETACHED_MARKER = "infopt-grader-detached-probe"


@dataclasses.dataclass(frozen=True)
class Case:
    """One student: how to build the upload, and the expected status, score and reason/flag/note patterns."""

    student: str
    what: str
    build: str  # name of a builder below
    snippet: str = ""
    target: int = 0  # which solution cell (in order; negative counts from the end) the snippet goes into
    status: str = "graded"
    score: str = "full"  # full | zero | before_target | full_minus_target
    reason: str = ""  # substring expected in the reason column
    flag: str = ""  # substring expected in the flags
    note: str = ""  # substring expected in the notes


FORK_BOMB = """
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
"""
MEMORY_BOMB = """
_hog = []
while True:
    _hog.append(b"x" * (32 * 2**20))
"""
SWALLOW_INTERRUPT = """
import time
while True:
    try:
        time.sleep(0.05)
    except BaseException:
        pass
"""
ESCAPE = """
import os, subprocess, sys
_report = []
for _path in ["{repo}/solutions/{unit}/{unit}.py", "{repo}/course/{unit}/{unit}.ipynb", "{repo}/gradebook.db",
              "{repo}/autograder/grade.py"]:
    try:
        open(_path).read(10)
        _report.append("READ " + _path)
    except OSError as _err:
        _report.append("denied " + type(_err).__name__)
for _path in ["{repo}/solutions/pwned.txt", "{repo}/course/pwned.txt", "../pwned.txt", "/usr/pwned.txt",
              "/work/pwned.txt"]:
    try:
        with open(_path, "w") as _f:
            _f.write("x")
        _report.append("WROTE " + _path)
    except OSError as _err:
        _report.append("denied " + type(_err).__name__)
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)  # {marker}"], start_new_session=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print("ESCAPE-REPORT", _report)
"""
RIGGED_EQ = """
class _Anything:
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
def {func}(*args, **kwargs):
    return _Anything()
"""
PATCH_CHECKERS = """
import numpy as np
import infopt.grading as _grading
np.testing.assert_allclose = lambda *args, **kwargs: None
_grading.check_equal = lambda *args, **kwargs: None
_grading.check_array = lambda *args, **kwargs: None
def isinstance(obj, cls):
    return True
def {func}(*args, **kwargs):
    return None
"""
TRANSFORMER = """
get_ipython().input_transformers_cleanup.append(lambda lines: ["pass\\n"])
"""
STDERR_WRAPPER = """
import functools, sys
_honest_{func} = {func}
@functools.wraps(_honest_{func})
def {func}(*args, **kwargs):
    print("DeprecationWarning: this is only a warning on stderr", file=sys.stderr)
    return _honest_{func}(*args, **kwargs)
"""
EXIT = """
import os
os._exit(1)
"""
BIG_OUTPUT = """
print("x" * 50_000_000)
"""
FAKE_NUMPY = "class _T:\n    def assert_allclose(self, *a, **k):\n        pass\ntesting = _T()\n"

CASES = [
    Case("a_honest_first", "an honest, correct submission graded before the hostile ones", "honest"),
    Case("b_bad_json", "a notebook that is not valid JSON", "bad_json", status="error", score="zero",
         reason="not valid JSON"),
    Case("c_nbformat5", "a notebook that claims nbformat 5", "nbformat5", status="error", score="zero",
         reason="nbformat 5"),
    Case("d_missing", "a roster student who submitted nothing", "none", status="missing", score="zero",
         reason="no submission"),
    Case("e_metadata", "edited schema_version and points, a deleted test cell, stripped solution metadata",
         "metadata", note="put back"),
    Case("f_os_exit", "the kernel exits (os._exit) in the third exercise", "append", EXIT, target=2,
         score="before_target", reason="kernel died at cell"),
    Case("g_swallow_interrupt", "a loop that swallows KeyboardInterrupt", "append", SWALLOW_INTERRUPT, target=1,
         score="before_target", reason="time limit"),
    Case("h_fork_bomb", "a fork bomb", "append", FORK_BOMB, target=0, status="flagged", score="before_target",
         reason="time limit", flag="os.fork"),
    Case("i_memory_bomb", "an allocation that grows without bound", "append", MEMORY_BOMB, target=1,
         score="before_target", reason="out of memory"),
    Case("j_big_output", "a 50 MB output line", "append", BIG_OUTPUT, target=0),
    Case("k_escape", "reads solutions/ and the gradebook, writes outside its folder, leaves a detached process",
         "append", ESCAPE, target=0, status="flagged", flag="solutions"),
    Case("l_rigged_eq", "returns an object whose == is always true", "append", RIGGED_EQ, target=-1,
         status="flagged", score="full_minus_target", flag="__eq__"),
    Case("m_patch_checkers", "replaces np.testing.assert_allclose, infopt.grading checks and isinstance",
         "append", PATCH_CHECKERS, target=-1, status="flagged", score="full_minus_target",
         flag="assert_allclose"),
    Case("n_transformer", "an IPython input transformer that turns every later cell into `pass`", "stub_plus",
         TRANSFORMER, target=0, status="flagged", score="zero", flag="input_transformers_cleanup"),
    Case("o_shadow_numpy", "ships numpy.py (a fake that passes every check) beside an empty notebook", "zip_numpy",
         status="flagged", score="zero", flag="numpy.py"),
    Case("p_stderr", "a correct solution that prints a warning to stderr in every test that calls it", "append",
         STDERR_WRAPPER, target=0),
    Case("q_renamed", "the notebook renamed inside a zip", "zip_renamed", note="renamed"),
    Case("z_honest_last", "an honest, correct submission graded after the hostile ones", "honest"),
]


def _solution_positions(master: list[MasterCell]) -> list[int]:
    return [i for i, c in enumerate(master) if c.kind == "solution"]


def target_position(case: Case, master: list[MasterCell]) -> int:
    """Index in the master of the solution cell a case targets (clamped to the unit's number of exercises)."""
    positions = _solution_positions(master)
    return positions[min(case.target, len(positions) - 1)] if case.target >= 0 else positions[case.target]


def first_function(source: str) -> str:
    """The name of the first function a solution cell defines (the snippets wrap or replace it)."""
    for node in ast.parse("\n".join(l for l in source.splitlines() if not l.strip().startswith("###"))).body:
        if isinstance(node, ast.FunctionDef):
            return node.name
    raise ValueError("the target solution cell defines no function")


def expected_score(case: Case, master: list[MasterCell]) -> float:
    """The total a case must get, from the unit's points and where the case's snippet goes."""
    tests = [(i, c) for i, c in enumerate(master) if c.kind == "test"]
    full = sum(c.points for _, c in tests)
    if case.score == "full":
        return full
    if case.score == "zero":
        return 0.0
    position = target_position(case, master)
    if case.score == "before_target":
        return sum(c.points for i, c in tests if i < position)
    grade_id = master[position].grade_id
    return full - sum(c.points for _, c in tests if c.grade_id == f"{grade_id}_test")


def _nb_bytes(nb: dict) -> bytes:
    return json.dumps(nb, indent=1).encode()


def build_upload(case: Case, master: list[MasterCell], unit: str, repo: Path) -> dict[str, bytes] | None:
    """{file name: bytes} of one case's upload (None: the student submits nothing)."""
    honest = release_notebook(master, solved=True)
    if case.build == "none":
        return None
    if case.build == "honest":
        return {f"{case.student}.ipynb": _nb_bytes(honest)}
    if case.build == "bad_json":
        return {f"{case.student}.ipynb": _nb_bytes(honest)[:-200]}
    if case.build == "nbformat5":
        return {f"{case.student}.ipynb": _nb_bytes({**honest, "nbformat": 5})}
    if case.build in ("append", "stub_plus"):
        nb = honest if case.build == "append" else release_notebook(master)
        position = target_position(case, master)
        cell = nb["cells"][position]
        func = first_function(master[position].source)
        snippet = case.snippet.replace("{func}", func).replace("{repo}", str(repo)).replace(
            "{unit}", unit).replace("{marker}", DETACHED_MARKER)
        cell["source"] = cell["source"] + "\n" + snippet
        return {f"{case.student}.ipynb": _nb_bytes(nb)}
    if case.build == "metadata":
        nb = copy.deepcopy(honest)
        tests = [c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade")]
        tests[0]["metadata"]["nbgrader"]["schema_version"] = 1
        tests[0]["metadata"]["nbgrader"]["points"] = 100
        solutions = [c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("solution")]
        solutions[-1]["metadata"] = {}  # found again by its cell id
        nb["cells"].remove(tests[-1])
        return {f"{case.student}.ipynb": _nb_bytes(nb)}
    if case.build == "zip_numpy":
        return {f"{case.student}.zip": _zip({f"{unit}.ipynb": _nb_bytes(release_notebook(master)),
                                             "numpy.py": FAKE_NUMPY.encode()})}
    if case.build == "zip_renamed":
        return {f"{case.student}.zip": _zip({"homework/my_final_version.ipynb": _nb_bytes(honest)})}
    raise ValueError(f"unknown builder {case.build!r}")


def _zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def materialize(master: list[MasterCell], unit: str, folder: Path, repo: Path,
                cases: list[Case] = CASES) -> Path:
    """Write every case's upload into folder/uploads and a roster into folder/roster.csv; return the roster."""
    uploads = Path(folder) / "uploads"
    uploads.mkdir(parents=True, exist_ok=True)
    for case in cases:
        files = build_upload(case, master, unit, repo)
        for name, data in (files or {}).items():
            (uploads / name).write_bytes(data)
    roster = Path(folder) / "roster.csv"
    roster.write_text("id,name\n" + "".join(f"{c.student},{c.what.replace(',', ';')}\n" for c in cases))
    return roster
