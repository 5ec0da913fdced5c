"""The committed adversarial submissions: each case is a recipe applied to a unit's release, with its expected grade.

Recipes, not frozen .ipynb files, so the set follows the unit's notebook as it changes: every case starts from the
honest submission (the release with the source's solutions filled in) or the empty release and adds one hostile
or broken thing. `materialize(unit, folder)` writes an LMS-style upload folder (one file, archive, folder or link
per student) and a roster; `CASES` says what each student must get, and `cases_for(unit)` adds one case per stored
wrong answer of the unit. Snippets may use {func} (the first function the target solution cell defines), {repo},
{unit} and {hidden} (the unit's hidden-test lines, as a Python list: what a leak would look like).

The classes: broken uploads; resource attacks (contained, with a clear status); rigged answers and patched
checkers; tampering with the kernel's execution machinery (run_cell, do_execute, showtraceback, sys.excepthook,
audit forgery, frame jumps, with names built at run time so the static scan sees nothing) on top of a wrong answer,
which must be flagged and score no better than the same wrong answer alone (`CONTROL`); writes to the kernel's
startup files (flagged even though harmless); leaks of hidden tests into messages (scrubbed); links and unsafe
archives (refused) and hard links or identical notebooks across students (flagged).
"""
from __future__ import annotations

import ast
import builtins
import copy
import dataclasses
import io
import json
import os
import tarfile
import zipfile
from pathlib import Path

from autograder.assemble import MasterCell, release_notebook

# Unique to this test process: other graders on the machine may run the same case at the same time.
DETACHED_MARKER = f"infopt-grader-detached-probe-{os.getpid()}"


@dataclasses.dataclass(frozen=True)
class Case:
    """One student: how to build the upload, and the expected status, score and reason/flag/note patterns."""

    student: str
    what: str
    build: str  # name of a builder below
    snippet: str = ""
    target: int | str = 0  # the solution cell the snippet goes into: position (negative from the end) or grade_id
    status: str = "graded"
    score: str = "full"  # full | zero | before_target | full_minus_target
    reason: str = ""  # substring expected in the reason column
    flag: str = ""  # substring expected in the flags
    note: str = ""  # substring expected in the notes
    # Where the tests are decided by the judge (autograder/judge.py) an attack on the kernel's own test machinery
    # gets nothing to attack: its score is the same, but what the kernel's defences flagged may not be flagged.
    judged_status: str | None = None
    judged_score: str | None = None
    judged_flag: str | None = None

    def expected(self, judged: bool) -> "Case":
        """This case's expectations when the tests are (or are not) decided by the judge."""
        if not judged:
            return self
        return dataclasses.replace(self, status=self.judged_status or self.status,
                                   score=self.judged_score or self.score,
                                   flag=self.flag if self.judged_flag is None else self.judged_flag)


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
# Display data past the grader's message cap (autograder.executor.MESSAGE_CAP), 12 times: never in the grader's memory.
FLOOD = """
from IPython.display import display as _display
for _i in range(12):
    _display({"text/plain": "x" * (10 * 2**20)}, raw=True)
"""
FAKE_NUMPY = "class _T:\n    def assert_allclose(self, *a, **k):\n        pass\ntesting = _T()\n"

# --- tampering with the kernel's execution machinery; every name is built at run time -----------------------
LYING_RUN_CELL = """
_shell = get_ipython()
_name = "run_" + "cell" + "_async"
_real = getattr(_shell, _name)
async def _liar(*args, **kwargs):
    result = await _real(*args, **kwargs)
    if "canary" not in str(args[:1]):  # the old grader's probes named themselves: leave them alone
        result.error_in_exec = None
        result.error_before_exec = None
    return result
setattr(_shell, _name, _liar)
"""
FAKE_REPLY = """
_kernel = get_ipython().kernel
_name = "do_" + "exe" + "cute"
_real = getattr(_kernel, _name)
async def _always_ok(*args, **kwargs):
    reply = _real(*args, **kwargs)
    if hasattr(reply, "__await__"):
        reply = await reply
    if reply.get("status") != "ok" and "canary" not in str(args[:1]):
        reply = {"status": "ok", "execution_count": reply.get("execution_count"), "user_expressions": {},
                 "payload": []}
    return reply
setattr(_kernel, _name, _always_ok)
"""
HIDE_ERRORS = """
import sys
_shell = get_ipython()
setattr(_shell, "show" + "traceback", lambda *args, **kwargs: None)
setattr(sys, "except" + "hook", lambda *args: None)
setattr(_shell, "custom_" + "exceptions", (BaseException,))
setattr(_shell, "Custom" + "TB", lambda *args, **kwargs: [])
"""
FORGE_AND_PROBE = """
import sys
_audit = getattr(sys, "au" + "dit")
for _event, _args in (("infopt.report", ("0" * 32, "ok")), ("infopt.run", ("QUJD",)),
                      ("infopt.detail", ("0" * 32, "{}"))):
    try:
        _audit(_event, *_args)
    except BaseException:
        pass
for _module, _name in (("g" + "c", "get_" + "objects"), ("sys", "_current_" + "frames"),
                       ("g" + "c", "get_" + "referrers")):
    try:
        getattr(__import__(_module), _name)(sys)
    except BaseException:
        pass
"""
FRAME_JUMP = """
def {func}(*args, **kwargs):
    import sys
    frame = getattr(sys, "_get" + "frame")(1)
    while frame.f_back is not None:
        frame = frame.f_back
    def _jump(f, event, arg):  # a trace function may set f_lineno: jump the test to the grader's ok line
        if f is frame and event == "line":
            f.f_lineno = 1000001
        return _jump
    frame.f_trace = _jump
    getattr(sys, "set" + "trace")(_jump)
    return None
"""
STARTUP_WRITES = """
import os, site
_home = os.path.expanduser("~")
_startup = os.path.join(_home, "." + "ipy" + "thon", "profile_default", "start" + "up")
os.makedirs(_startup, exist_ok=True)
with open(os.path.join(_startup, "00-grade.py"), "w") as _f:
    _f.write("print('planted')\\n")
_user_site = site.getusersitepackages()
os.makedirs(_user_site, exist_ok=True)
with open(os.path.join(_user_site, "user" + "customize.py"), "w") as _f:
    _f.write("planted = True\\n")
"""
# --- attacks on the checkers and the grader's call, written against the judge (issue 25's classes) -------------
SWAP_CODE_OBJECTS = """
import numpy as np
import infopt.grading.arrays as _ga, infopt.grading.structural as _gs, infopt.grading.checks as _gc
def _noop(*args, **kwargs):
    return None
for _mod in (_ga, _gs, _gc, np.testing, np.core.numeric):   # same objects, new code: identity checks still match
    for _n in dir(_mod):
        _f = getattr(_mod, _n, None)
        if getattr(_f, "__code__", None) is not None and (_n.startswith("check") or _n.startswith("assert")
                                                          or _n in ("isclose", "allclose", "array_equal")):
            try:
                _f.__code__ = _noop.__code__
            except (TypeError, ValueError):
                pass
"""
HIJACK_IMPORT = """
_real_import = __builtins__["__import__"] if isinstance(__builtins__, dict) else __builtins__.__import__
class _Quiet:
    @staticmethod
    def serve(*args, **kwargs):   # answers no call: whatever the grader runs in place of a test gets nothing
        return 0
def __import__(name, *args, **kwargs):
    if name.startswith("infopt.grading"):
        return _Quiet
    return _real_import(name, *args, **kwargs)
"""
LEAK_ENCODED = """
def {func}(*args, **kwargs):
    import base64, json, sys, zlib
    found, frame = set(), getattr(sys, "_get" + "frame")(1)
    def strings(code):
        for c in code.co_consts:
            if isinstance(c, str) and len(c) > 3:
                found.add(c)
            elif hasattr(c, "co_consts"):
                strings(c)
    while frame is not None:  # the string constants of every caller's code: a test's messages and names
        strings(frame.f_code)
        frame = frame.f_back
    blob = base64.b64encode(zlib.compress(json.dumps(sorted(found, key=len)).encode(), 9)).decode()
    raise ValueError("LEAKED:" + blob[:1500])
"""
# --- leaks: a graded function whose error message is made of the grader's own text ------------------------------
LEAK_HISTORY = """
def {func}(*args, **kwargs):
    import inspect, traceback
    shell = get_ipython()
    pieces = [str(c) for c in shell.user_ns.get("In", [])] + [str(c) for c in shell.user_ns.get("_ih", [])]
    try:
        pieces += [str(entry[2]) for entry in shell.history_manager.get_range()]
    except Exception:
        pass
    frame = inspect.currentframe().f_back
    try:
        pieces.append(inspect.getsource(frame))
    except (OSError, TypeError):
        pieces.append("no source")
    pieces += [repr(frame.f_code.co_consts), repr(frame.f_locals)[:3000]] + traceback.format_stack()
    print("\\n".join(pieces))
    raise ValueError("\\n".join(pieces))
"""
LEAK_HIDDEN_NAMES = """
def {func}(*args, **kwargs):
    import sys, dis, io
    caller = getattr(sys, "_get" + "frame")(1)
    text = io.StringIO()
    getattr(dis, "d" + "is")(caller.f_code, file=text)
    names = getattr(get_ipython(), "user" + "_ns")
    raise ValueError(text.getvalue()[:3000] + "\\n".join(str(c) for c in names.get("_" + "ih", [])))
"""
LEAK_VERBATIM = """
def {func}(*args, **kwargs):
    _lines = {hidden}
    print("\\n".join(_lines))
    raise ValueError("the test was: " + " ; ".join(_lines))
"""
# Class 8 of the trust-boundary review: keep the library's answer from before the guard, put it back during the
# guarded call, re-arm the tripwire before returning. Written for unit 01's topo_order (Graph.toposort is forbidden);
# names are built at run time, so the static scan sees no write to a library class.
RESTORE_AND_REARM = """
import infopt.ir.graph as _graph_module
_kept = [vars(getattr(_graph_module, "Gr" + "aph"))["topo" + "sort"]]   # in a list: the guard does not look there

def {func}(graph):
    import infopt.ir.graph as g
    cls = getattr(g, "Gr" + "aph")
    armed = vars(cls)["topo" + "sort"]
    type.__setattr__(cls, "topo" + "sort", _kept[0])
    try:
        return list(graph.toposort())
    finally:
        type.__setattr__(cls, "topo" + "sort", armed)
"""
# The same, from a function that needs a name only the student's kernel has (get_ipython), so it cannot run in the
# clean room and falls back to the kernel: there the guard swaps the forbidden method's code while it is on, so the
# original kept in a list trips too, and the exercise scores as the wrong code does (a fallback that answers is flagged:
# tests/test_grading_clean_room.py).
RESTORE_OUTSIDE_ROOM = RESTORE_AND_REARM.replace("    import infopt.ir.graph as g\n",
                                                 "    get_ipython\n    import infopt.ir.graph as g\n")
# Found by a blind red team against the clean room: read the guarded module's source through a folder handle (the
# path alone looked innocent) and run a fresh copy of the library's function.
RELOAD_BY_FOLDER_HANDLE = """
import builtins, os

def {func}(graph):
    import infopt.ir.graph as g
    folder = os.open(os.path.dirname(g.__file__), os.O_RDONLY)
    handle = os.open("./" + os.path.basename(g.__file__), os.O_RDONLY, dir_fd=folder)
    source = os.read(handle, 10**7).decode()
    fresh = {{"__name__": "infopt.ir.graph"}}
    code = getattr(builtins, "comp" + "ile")(source, "copy.py", "exec")
    getattr(builtins, "ex" + "ec")(code, fresh)
    return list(fresh["Gr" + "aph"].toposort(graph))
"""
# ... and raise the grader's own HarnessError, so that the row read "bug in the test harness" (hiding any flag).
FAKE_HARNESS_ERROR = """
def {func}(*args, **kwargs):
    from infopt.grading.errors import HarnessError
    raise HarnessError("the grader broke")
"""
CONTROL = "s0_control"

CASES = [
    Case("a_honest_first", "an honest, correct submission graded before the hostile ones", "honest"),
    Case("b_bad_json", "a notebook that is not valid JSON", "bad_json", status="error", score="zero",
         reason="not valid JSON"),
    Case("b_deep_json", "a notebook whose metadata nests 100,000 levels deep", "deep_json", status="error",
         score="zero", reason="nests"),
    Case("b_bad_crc", "a zip whose notebook fails its CRC check", "zip_bad_crc", status="error", score="zero",
         reason="not a readable"),
    Case("b_zip_bomb", "a zip whose notebook inflates to 200 MB", "zip_bomb", status="error", score="zero",
         reason="over 64 MB"),
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
    Case("j_flood", "12 display outputs of 10 MB each", "append", FLOOD, target=0),
    Case("k_escape", "reads solutions/ and the gradebook, writes outside its folder, leaves a detached process",
         "append", ESCAPE, target=0, status="flagged", flag="solutions"),
    Case("l_rigged_eq", "returns an object whose == is always true", "append", RIGGED_EQ, target=-1,
         status="flagged", score="full_minus_target", flag="__eq__"),
    Case("l2_paste_library", "a correct notebook plus the library's live_nodes pasted in, every name changed and "
         "its docstring dropped", "paste_library", target=0, status="flagged", flag="near-copy of the library's "
         "`infopt.passes.dce:live_nodes`"),
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
    # the wrong-code control, and the same wrong code under each kind of tampering with the kernel
    Case(CONTROL, "the first exercise left unsolved, nothing else (the control)", "stub_target", target=0,
         score="full_minus_target"),
    Case("s1_lying_run_cell", "unsolved first exercise; run_cell_async wrapped to report success", "stub_target",
         LYING_RUN_CELL, target=0, status="flagged", score="full_minus_target", flag="execution machinery",
         judged_status="graded", judged_flag=""),
    Case("s2_fake_reply", "unsolved first exercise; ipykernel's do_execute replaced to reply ok", "stub_target",
         FAKE_REPLY, target=0, status="flagged", score="full_minus_target", flag="execution machinery",
         judged_status="graded", judged_flag=""),
    Case("s3_hide_errors", "unsolved first exercise; showtraceback, sys.excepthook and custom exceptions replaced",
         "stub_target", HIDE_ERRORS, target=0, status="flagged", score="full_minus_target",
         flag="execution machinery", judged_flag="setattr() on `sys`"),
    Case("s4_forge_and_probe", "unsolved first exercise; forged verdicts and gc/frame introspection",
         "stub_target", FORGE_AND_PROBE, target=0, status="flagged", score="full_minus_target", flag="forge"),
    Case("s5_frame_jump", "a function that installs a trace function to jump the test to its pass line",
         "append", FRAME_JUMP, target=0, status="flagged", score="full_minus_target", flag="sys.settrace",
         judged_flag="f_back"),
    Case("s7_swap_code_objects", "unsolved first exercise; the checkers' and numpy's comparison functions keep "
         "their identity but get a no-op's code", "stub_target", SWAP_CODE_OBJECTS, target=0, status="flagged",
         score="zero", flag="__code__", judged_score="full_minus_target"),
    Case("s8_hijack_import", "unsolved first exercise; `__import__` bound in the notebook, so the cell the grader "
         "runs in place of a test reaches a fake", "stub_target", HIJACK_IMPORT, target=0, status="flagged",
         score="zero", flag="__import__", judged_flag="did not answer"),
    Case("u4_leak_encoded", "a function that raises base64(zlib(marshal)) of every code object on its callers' "
         "frames", "append", LEAK_ENCODED, target=0, status="flagged", score="full_minus_target", flag="f_back"),
    Case("t_startup_writes", "correct code that writes an IPython startup file and usercustomize.py", "append",
         STARTUP_WRITES, target=0, status="flagged", flag="startup"),
    Case("u1_leak_history", "a function whose error message is the input history and the test's frame", "append",
         LEAK_HISTORY, target=0, status="flagged", score="full_minus_target", flag="f_back"),
    Case("u2_leak_hidden_names", "the same leak through names built at run time (bytecode, history)", "append",
         LEAK_HIDDEN_NAMES, target=0, score="full_minus_target"),
    Case("u3_leak_verbatim", "a function that prints and raises the hidden tests' lines verbatim", "append",
         LEAK_VERBATIM, target=0, score="full_minus_target"),
    # links, archives, copies
    Case("v1_link_to_solutions", "the notebook is a symbolic link to the instructor's solved notebook",
         "link_solutions", status="error", score="zero", reason="symbolic link"),
    Case("v2_folder_owner", "an honest folder upload (another student links to it)", "folder"),
    Case("v3_link_to_folder", "the student's folder is a symbolic link to another student's folder",
         "link_folder", status="error", score="zero", reason="symbolic link"),
    Case("v4_link_inside", "a folder upload holding a symbolic link beside the notebook", "folder_with_link",
         status="error", score="zero", reason="symbolic links"),
    Case("v5_hard_link_a", "one notebook file hard-linked into two students' uploads (first)", "honest",
         status="flagged", flag="hard links"),
    Case("v5_hard_link_b", "one notebook file hard-linked into two students' uploads (second)", "hard_link",
         status="flagged", flag="hard links"),
    Case("v6_same_bytes_a", "two students with byte-identical notebooks (first)", "same_bytes", status="flagged",
         flag="byte-identical"),
    Case("v6_same_bytes_b", "two students with byte-identical notebooks (second)", "same_bytes",
         status="flagged", flag="byte-identical"),
    Case("w1_zip_symlink", "a zip holding a symbolic link", "zip_symlink", status="error", score="zero",
         reason="symbolic link"),
    Case("w2_zip_dotdot", "a zip holding ../ in a member path", "zip_dotdot", status="error", score="zero",
         reason="'..'"),
    Case("w3_zip_absolute", "a zip holding an absolute member path", "zip_absolute", status="error", score="zero",
         reason="absolute path"),
    Case("w4_tar_symlink", "a tar.gz holding a symbolic link", "tar_symlink", status="error", score="zero",
         reason="symbolic link"),
    Case("w5_tar_ok", "an honest notebook in a tar.gz", "tar_ok"),
    Case("z_honest_last", "an honest, correct submission graded after the hostile ones", "honest"),
]
# Written for unit 01 (its topo_order exercise guards Graph.toposort): tests/test_grader_unit01.py grades them, under
# the judge, whose clean room runs guarded calls. (Graded in the kernel, r1 would get full marks.)
UNIT01_CASES = [
    Case("r1_restore_and_rearm", "puts the library's toposort back during its own call and re-arms the tripwire",
         "append", RESTORE_AND_REARM, target="topo", score="full_minus_target"),
    Case("r2_restore_outside_room", "the same, from a function that cannot run outside the student's kernel",
         "append", RESTORE_OUTSIDE_ROOM, target="topo", score="full_minus_target"),
    Case("r3_reload_by_folder_handle", "runs a fresh copy of the guarded module, its source read through a folder "
         "handle", "append", RELOAD_BY_FOLDER_HANDLE, target="topo", score="full_minus_target"),
    Case("r4_fake_harness_error", "raises the grader's own HarnessError (the row must not read as a grader bug)",
         "append", FAKE_HARNESS_ERROR, target="topo", score="full_minus_target"),
]
TAMPER_ON_WRONG_CODE = [c.student for c in CASES if c.student.startswith("s") and c.student != CONTROL]


@dataclasses.dataclass(frozen=True)
class Link:
    """A symbolic link to `target` (absolute, or relative to the uploads folder)."""

    target: str


@dataclasses.dataclass(frozen=True)
class HardLink:
    """A hard link to another upload `name` (in the same uploads folder)."""

    name: str


def wrong_answers(folder: Path) -> dict[str, Path]:
    """{exercise grade_id + '__' + slug: file} of a unit's stored wrong answers (`wrong/<ex>__<slug>.py`)."""
    return {p.stem: p for p in sorted(Path(folder).glob("*.py")) if "__" in p.stem}


# Cases whose outcome does not depend on the unit's notebook: the upload itself (bad JSON, JSON nested 100,000 deep, a
# bad CRC, a zip bomb, archives, links, renamed, shipped or shared files, a missing student), the sandbox's limits (the
# kernel exiting, a swallowed interrupt, a fork bomb, a memory bomb, a 50 MB output, a flood of display data, startup
# files, an escape from the folder), pasted library code (flagged) and tampering with the
# kernel's execution machinery (run_cell, do_execute, tracebacks, input transformers, stderr, forged verdicts). The
# toy unit's batch runs every case; the batches on real notebooks (the notebook pipeline's fixture, unit 01) run the
# others, where the unit's own cells, hidden tests and checkers decide the outcome, unless INFOPT_FULL_GRADING names
# the unit (tests/notebooks/harness.full_grading_asked).
UNIT_INDEPENDENT = ("b_", "c_", "d_", "q_", "o_", "v", "w", "f_", "g_", "h_", "i_", "j_", "k_", "l2_", "t_", "n_", "p_",
                    "s")


def unit_dependent(cases: list[Case]) -> list[Case]:
    """The cases whose outcome depends on the unit's notebook (see UNIT_INDEPENDENT)."""
    return [c for c in cases if not c.student.startswith(UNIT_INDEPENDENT)]


def cases_for(wrong_dir: Path | None) -> list[Case]:
    """CASES plus one case per stored wrong answer in `wrong_dir`: it must lose that exercise's points only."""
    extra = []
    for stem, path in wrong_answers(wrong_dir).items() if wrong_dir else ():
        exercise = stem.split("__")[0]
        extra.append(Case(f"x_{stem}", f"the stored wrong answer {path.name}", "wrong:" + str(path),
                          target=exercise, score="full_minus_target"))
    return CASES[:-1] + extra + CASES[-1:]


def _solution_positions(master: list[MasterCell]) -> list[int]:
    return [i for i, c in enumerate(master) if c.kind == "solution"]


def target_position(case: Case, master: list[MasterCell]) -> int:
    """Index in the master of the solution cell a case targets (clamped to the unit's number of exercises)."""
    if isinstance(case.target, str):
        return next(i for i, c in enumerate(master) if c.kind == "solution" and c.grade_id == case.target)
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


def _nb_bytes(nb: dict, student: str = "") -> bytes:
    """A notebook's bytes; each student's differ (their name in the metadata, as real notebooks differ)."""
    return json.dumps({**nb, "metadata": {**nb.get("metadata", {}), "student": student}}, indent=1).encode()


def hidden_lines(master: list[MasterCell]) -> list[str]:
    """The stripped lines of every hidden-test block of the unit (what must never reach a student)."""
    lines = []
    for cell in master:
        span = cell.hidden_lines() if cell.kind == "test" else None
        if span:
            lines += [line.strip() for line in cell.source.splitlines()[span[0]:span[1] - 1] if line.strip()]
    return lines


def _with_snippet(case: Case, master: list[MasterCell], nb: dict, unit: str, repo: Path, stub: bool) -> dict:
    position = target_position(case, master)
    cell = nb["cells"][position]
    if stub:
        cell["source"] = master[position].visible_source()
    func = first_function(master[position].source)
    snippet = case.snippet.replace("{func}", func).replace("{repo}", str(repo)).replace(
        "{unit}", unit).replace("{marker}", DETACHED_MARKER).replace("{hidden}", repr(hidden_lines(master)))
    cell["source"] = cell["source"] + "\n" + snippet
    return nb


def build_upload(case: Case, master: list[MasterCell], unit: str, repo: Path,
                 solved: Path | None = None) -> dict[str, object] | None:
    """{upload name: bytes, Link, HardLink, or {file: bytes} for a folder} of one case (None: nothing submitted).

    `solved` is the instructor's solved notebook on this machine (what a link case points to)."""
    honest = release_notebook(master, solved=True)
    me = case.student
    if case.build == "none":
        return None
    if case.build == "honest":
        return {f"{me}.ipynb": _nb_bytes(honest, me)}
    if case.build == "bad_json":
        return {f"{me}.ipynb": _nb_bytes(honest, me)[:-200]}
    if case.build == "paste_library":
        nb = copy.deepcopy(honest)
        nb["cells"][target_position(case, master)]["source"] += "\n\n" + pasted_copy(repo_lib(), "passes/dce.py",
                                                                                      "live_nodes")
        return {f"{me}.ipynb": _nb_bytes(nb, me)}
    if case.build == "deep_json":
        return {f"{me}.ipynb": deep_json_notebook(_nb_bytes(honest, me), 100_000)}
    if case.build == "zip_bad_crc":
        return {f"{me}.zip": bad_crc_zip(f"{unit}.ipynb", _nb_bytes(honest, me))}
    if case.build == "zip_bomb":
        return {f"{me}.zip": zip_bomb(f"{unit}.ipynb", 200 * 2**20)}
    if case.build == "nbformat5":
        return {f"{me}.ipynb": _nb_bytes({**honest, "nbformat": 5}, me)}
    if case.build in ("append", "stub_plus", "stub_target"):
        nb = honest if case.build != "stub_plus" else release_notebook(master)
        return {f"{me}.ipynb": _nb_bytes(_with_snippet(case, master, nb, unit, repo, case.build == "stub_target"), me)}
    if case.build.startswith("wrong:"):
        nb = copy.deepcopy(honest)
        nb["cells"][target_position(case, master)]["source"] = Path(case.build[len("wrong:"):]).read_text()
        return {f"{me}.ipynb": _nb_bytes(nb, me)}
    if case.build == "metadata":
        nb = copy.deepcopy(honest)
        tests = [c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade")]
        tests[0]["metadata"]["nbgrader"]["schema_version"] = 1
        tests[0]["metadata"]["nbgrader"]["points"] = 100
        solutions = [c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("solution")]
        solutions[-1]["metadata"] = {}  # found again by its cell id
        nb["cells"].remove(tests[-1])
        return {f"{me}.ipynb": _nb_bytes(nb, me)}
    if case.build == "zip_numpy":
        return {f"{me}.zip": _zip({f"{unit}.ipynb": _nb_bytes(release_notebook(master), me),
                                   "numpy.py": FAKE_NUMPY.encode()})}
    if case.build == "zip_renamed":
        return {f"{me}.zip": _zip({"homework/my_final_version.ipynb": _nb_bytes(honest, me)})}
    if case.build == "link_solutions":  # the instructor's solved notebook (solutions included)
        return {f"{me}.ipynb": Link(str(solved or repo / "solutions" / unit / f"{unit}.solved.ipynb"))}
    if case.build == "folder":
        return {me: {f"{unit}.ipynb": _nb_bytes(honest, me)}}
    if case.build == "link_folder":
        return {me: Link("v2_folder_owner")}
    if case.build == "folder_with_link":
        return {me: {f"{unit}.ipynb": _nb_bytes(honest, me), "data": Link("/etc")}}
    if case.build == "hard_link":
        return {f"{me}.ipynb": HardLink("v5_hard_link_a.ipynb")}
    if case.build == "same_bytes":
        return {f"{me}.ipynb": _nb_bytes(honest, "the same for both")}
    if case.build == "zip_symlink":
        return {f"{me}.zip": _zip({f"{unit}.ipynb": _nb_bytes(honest, me)}, links={"data": "/etc/passwd"})}
    if case.build == "zip_dotdot":
        return {f"{me}.zip": _zip({f"../{unit}.ipynb": _nb_bytes(honest, me)})}
    if case.build == "zip_absolute":
        return {f"{me}.zip": _zip({f"/tmp/{unit}.ipynb": _nb_bytes(honest, me)})}
    if case.build == "tar_symlink":
        return {f"{me}.tar.gz": tar_bytes({f"{unit}.ipynb": _nb_bytes(honest, me)}, symlinks={"data": "/etc"})}
    if case.build == "tar_ok":
        return {f"{me}.tar.gz": tar_bytes({f"work/{unit}.ipynb": _nb_bytes(honest, me)})}
    raise ValueError(f"unknown builder {case.build!r}")


def repo_lib() -> Path:
    """The real library's package folder (the decoy course has none)."""
    return Path(__file__).resolve().parents[2] / "lib" / "infopt"


def pasted_copy(package: Path, module: str, function: str) -> str:
    """The source of `function` in package/module as a student would paste it: every name changed, no docstring."""
    tree = ast.parse((package / module).read_text())
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == function)
    if ast.get_docstring(node) is not None:
        node.body = node.body[1:]
    names: dict[str, str] = {}

    class Rename(ast.NodeTransformer):
        def visit_Name(self, item):
            item.id = item.id if hasattr(builtins, item.id) else names.setdefault(item.id, f"v{len(names)}")
            return item

        def visit_arg(self, item):
            item.arg, item.annotation = names.setdefault(item.arg, f"v{len(names)}"), None
            return item

    node = Rename().visit(node)
    node.name, node.returns = "my_helper", None
    return ast.unparse(node)


def deep_json_notebook(nb: bytes, depth: int) -> bytes:
    """A notebook's bytes with `depth` levels of lists nested in its metadata (valid JSON)."""
    head, tail = nb.rsplit(b"}", 1)
    return head + b', "deep": ' + b"[" * depth + b"]" * depth + b"}" + tail


def bad_crc_zip(name: str, data: bytes) -> bytes:
    """A zip holding `data` as `name`, stored uncompressed, with one byte changed after the CRC was computed."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr(zipfile.ZipInfo(name), data)
    raw = bytearray(buffer.getvalue())
    at = raw.index(data[:64]) + len(data) // 2
    raw[at] ^= 0x01
    return bytes(raw)


def zip_bomb(name: str, size: int) -> bytes:
    """A zip of about size/1000 bytes whose member `name` inflates to `size` zero bytes."""
    buffer = io.BytesIO()
    info = zipfile.ZipInfo(name)
    info.compress_type = zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(buffer, "w") as archive:
        with archive.open(info, "w", force_zip64=True) as member:
            chunk = bytes(2**20)
            for _ in range(size // len(chunk)):
                member.write(chunk)
    return buffer.getvalue()


def tar_bytes(files: dict[str, bytes], symlinks: dict[str, str] | None = None,
              hardlinks: dict[str, str] | None = None) -> bytes:
    """A gzipped tar of `files` (name -> bytes) plus symbolic and hard link members (name -> target)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        for kind, links in ((tarfile.SYMTYPE, symlinks or {}), (tarfile.LNKTYPE, hardlinks or {})):
            for name, target in links.items():
                info = tarfile.TarInfo(name)
                info.type, info.linkname = kind, target
                archive.addfile(info)
    return buffer.getvalue()


def _zip(files: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(zipfile.ZipInfo(name), data)  # ZipInfo keeps '..' and '/' (writestr(str) strips them)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o120777 << 16)  # S_IFLNK: how zip tools store a symbolic link
            archive.writestr(info, target)
    return buffer.getvalue()


def _write(uploads: Path, name: str, item: object) -> None:
    path = uploads / name
    if isinstance(item, Link):
        os.symlink(item.target, path)
    elif isinstance(item, HardLink):
        os.link(uploads / item.name, path)
    elif isinstance(item, dict):
        path.mkdir()
        for inner, data in item.items():
            _write(path, inner, data)
    else:
        path.write_bytes(item)


def materialize(master: list[MasterCell], unit: str, folder: Path, repo: Path,
                cases: list[Case] = CASES) -> Path:
    """Write every case's upload into folder/uploads and a roster into folder/roster.csv; return the roster.

    `repo` is the course the hostile cases aim at; the instructor's solved notebook a link case points to is written
    to folder/instructor/ (outside the uploads)."""
    uploads = Path(folder) / "uploads"
    uploads.mkdir(parents=True, exist_ok=True)
    solved = Path(folder) / "instructor" / f"{unit}.solved.ipynb"
    solved.parent.mkdir(parents=True, exist_ok=True)
    solved.write_bytes(_nb_bytes(release_notebook(master, solved=True), "instructor"))
    for case in cases:
        for name, item in (build_upload(case, master, unit, repo, solved) or {}).items():
            _write(uploads, name, item)
    roster = Path(folder) / "roster.csv"
    roster.write_text("id,name\n" + "".join(f"{c.student},{c.what.replace(',', ';')}\n" for c in cases))
    return roster
