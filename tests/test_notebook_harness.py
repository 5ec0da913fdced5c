"""The notebook harness must be able to fail: a deliberately broken unit gets every one of its flaws reported."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from autograder import release
from tests.notebooks import harness
from tests.notebooks.harness import Unit

BROKEN = Path(__file__).parent / "notebooks" / "fixtures" / "broken"

pytestmark = [pytest.mark.notebook, pytest.mark.xdist_group("00_broken")]


@pytest.fixture(scope="module")
def broken(tmp_path_factory):
    course = tmp_path_factory.mktemp("course")
    release.write_release("00_broken", BROKEN, course)
    unit = Unit("00_broken", BROKEN, course)
    return unit, harness.grade_unit(unit)


def test_structure_flaws_are_reported(broken):
    unit, _ = broken
    text = "\n".join(harness.structure_problems(unit))
    assert "uses_test: no hidden tests" in text
    assert "exercise 'free' has no stored wrong answer" in text


def test_solution_errors_release_points_and_weak_tests_are_reported(broken):
    unit, graded = broken
    assert any("RuntimeError" in p for p in harness.solution_problems(graded))
    assert any("free_test" in p for p in harness.release_problems(graded))
    weak = harness.wrong_answer_problems(unit, graded, "wrong_double__square")
    assert any("still earns" in p for p in weak), weak
    coupled = harness.wrong_answer_problems(unit, graded, "wrong_double__off_by_one")
    assert any("also loses points on uses_test" in p for p in coupled), coupled


def test_a_leak_into_course_is_found(broken):
    unit, _ = broken
    assert harness.leaks(unit) == []
    path = unit.release_file
    nb = json.loads(path.read_text())
    nb["cells"][0]["source"].append("\ncheck_equal(double(0), 0)  # too weak: x * x passes too")
    path.write_text(json.dumps(nb))
    try:
        found = harness.leaks(unit)
        assert any("hidden-test line" in f for f in found), found
    finally:
        release.write_release("00_broken", BROKEN, unit.course)


def test_a_test_that_reads_another_exercises_state_is_named_with_both_cells(broken):
    unit, graded = broken
    problems = harness.dependence_problems(unit)
    assert any("'uses_test'" in p and "`double`" in p and "exercise 'double'" in p for p in problems), problems
    # and nbgrader agrees that this coupling is real: the off-by-one `double` costs uses_test its point
    assert graded.scores["wrong_double__off_by_one"]["uses_test"][0] == 0


FIXTURE = Path(__file__).parent / "notebooks" / "fixtures" / "solutions"


def test_fast_path_grades_hangs_crashes_and_stderr_as_nbgrader_would():
    """A variant that loops, segfaults or writes to stderr (Python or C level) gets the
    outcome nbgrader would give it, and the solution run is untouched by all of them."""
    from tests.notebooks.fastpath import Variant, run_fast_path

    source = release.build_source_notebook("00_fixture", FIXTURE)
    variants = [
        Variant("hang", "add", "def add(a, b):\n    while True:\n        pass"),
        Variant("segfault", "add", "import ctypes\ndef add(a, b):\n    return ctypes.string_at(0)"),
        Variant("py_stderr", "add", "import sys\ndef add(a, b):\n    print('note', file=sys.stderr)\n    return a + b"),
        Variant("c_stderr", "add", "import os\ndef add(a, b):\n    os.write(2, b'note')\n    return a + b"),
        Variant("right", "add", "def add(a, b):\n    return a + b"),
        Variant("seeded", "softmax", None, prelude="import numpy as np\nnp.random.seed(0)"),
    ]
    result = run_fast_path(source, variants, cell_timeout_s=5)
    got = {k: (o.status, o.score, o.max) for k, o in result.variants.items()}
    assert got["hang"] == ("timeout", 0.0, 2.0)
    assert got["segfault"][:2] == ("died", 0.0) and "signal 11" in result.variants["segfault"].message
    assert got["py_stderr"][:2] == ("fail", 0.0) and "stderr" in result.variants["py_stderr"].message
    assert got["c_stderr"][:2] == ("fail", 0.0)
    assert got["right"] == ("pass", 2.0, 2.0)
    assert got["seeded"] == ("pass", 3.0, 3.0)  # code=None keeps the solution
    assert {k: o.score for k, o in result.solution.items()} == {"add_test": 2.0, "softmax_test": 3.0}
    assert result.errors == []


def test_a_bad_manifest_is_refused_naming_the_file(tmp_path):
    from tests.notebooks.manifest import load_manifest

    (tmp_path / "unit.toml").write_text('device = "tpu"\n')
    with pytest.raises(ValueError, match="unit.toml: device must be one of"):
        load_manifest(tmp_path)
    (tmp_path / "unit.toml").write_text("budget = 3\n")
    with pytest.raises(ValueError, match="unknown keys \\['budget'\\]"):
        load_manifest(tmp_path)
    assert load_manifest(tmp_path / "missing").budget_s == 90.0


def test_a_broken_rule_table_gets_each_flaw_reported(broken):
    unit, graded = broken
    text = "\n".join(harness.rule_problems(unit, graded))
    assert "the text states a requirement no row covers: 'it must return an int.'" in text, text
    assert "says 'even for negative numbers', which is not in the exercise's text" in text
    assert "exercise 'free' has no [[rule]]" in text
    assert "wrong answer 'double__off_by_one' belongs to 2 rules" in text
    # double__square passes the too-weak hidden test, so the rule's check never caught it
    assert "its wrong answer double__square still earns 1" in text


def test_the_fixture_rule_table_passes(tmp_path):
    unit = Unit("00_fixture", FIXTURE, tmp_path)
    assert harness.rule_problems(unit) == []


def test_a_fast_path_process_dies_with_its_parent(tmp_path):
    """A test run killed outright (SIGKILL, a CI timeout) must not leave the fast-path worker or its forks running."""
    import os
    import signal
    import subprocess
    import sys
    import time

    marker = tmp_path / "child.pid"
    parent_code = (
        "import subprocess, sys, time\n"
        "subprocess.Popen([sys.executable, '-c', 'import os, sys, time; sys.path.insert(0, sys.argv[1]);"
        " from tests.notebooks.fastpath import die_with_parent; die_with_parent();"
        " open(sys.argv[2], \"w\").write(str(os.getpid())); time.sleep(120)', sys.argv[1], sys.argv[2]])\n"
        "time.sleep(120)\n")
    repo = str(Path(__file__).resolve().parent.parent)
    parent = subprocess.Popen([sys.executable, "-c", parent_code, repo, str(marker)])
    try:
        for _ in range(200):
            if marker.is_file() and marker.read_text():
                break
            time.sleep(0.05)
        child = int(marker.read_text())
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        for _ in range(100):
            try:
                os.kill(child, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            os.kill(child, signal.SIGKILL)
            raise AssertionError("the child outlived its parent by 5 s")
    finally:
        if parent.poll() is None:
            parent.kill()


def test_packs_hold_one_wrong_answer_per_exercise_and_keep_an_exercise_solved():
    """make test's nbgrader submissions: the k-th wrong answer of each exercise in pack k, an exercise left solved
    after the first wrong one (it proves the others cost only their own exercise), the proof's each alone."""
    order = ["a", "b", "c"]
    packs = harness.pack_submissions([("w1", "a"), ("w2", "a"), ("w3", "b")], order, set())
    assert packs == {"pack1": {"a": "w1", "b": "w3"}, "pack2": {"a": "w2"}}
    assert harness.pack_submissions([("w1", "a"), ("w3", "b")], order, {"w1", "w3"}) == {
        "w1": {"a": "w1"}, "w3": {"b": "w3"}}
    with pytest.raises(ValueError, match="leave no exercise solved after 'a'"):
        harness.pack_submissions([("w1", "a"), ("w2", "b"), ("w3", "c")], order, set())
    with pytest.raises(ValueError, match="leave no exercise solved after 'c'"):
        harness.pack_submissions([("w3", "c")], order, set())


def test_make_test_grades_under_one_fixed_seed_and_the_proof_under_twenty():
    """The two tiers are the same tests with other parameters: the seeds come from INFOPT_GRADING_SEEDS."""
    import os
    import subprocess
    import sys

    from tests.notebooks import proof

    code = "import tests.notebooks.harness as h; print(list(h.SEEDS))"
    repo = str(Path(__file__).resolve().parent.parent)
    env = {k: v for k, v in os.environ.items() if k != "INFOPT_GRADING_SEEDS"}
    plain = subprocess.run([sys.executable, "-c", code], cwd=repo, env=env, capture_output=True, text=True)
    assert plain.stdout.strip() == "[1]", plain.stderr
    env = proof.proof_env(["10_kernels"])
    assert env["INFOPT_FULL_GRADING"] == "10_kernels"
    full = subprocess.run([sys.executable, "-c", code], cwd=repo, env=env, capture_output=True, text=True)
    assert full.stdout.strip() == str(list(range(1, 21))), full.stderr
    cmd = " ".join(proof.pytest_command(["01_graphs_ir"], 2))
    assert "tests/test_notebooks.py" in cmd and "tests/test_browser.py" in cmd and "test_grader_unit01" in cmd


KILLS_ITS_FORK_POINT = '''def add(a: int, b: int) -> int:
    import os
    import signal
    if os.getppid() == os.getpgid(0):  # a fork point's variant (nbgrader's kernel is not its parent's group)
        os.kill(os.getppid(), signal.SIGKILL)
    return a - b
'''


def test_a_fork_point_that_dies_leaves_its_wrong_answers_ungraded_never_rejected(tmp_path):
    """A harness failure must never pass for a rejection: when the fork point of an exercise dies, its wrong answers,
    its release stub and its control are reported as not graded, naming why."""
    import shutil

    solutions, course = tmp_path / "solutions", tmp_path / "course"
    shutil.copytree(FIXTURE / "00_fixture", solutions / "00_fixture")
    (solutions / "00_fixture" / "wrong" / "add__aa_kills_fork_point.py").write_text(KILLS_ITS_FORK_POINT)
    (solutions / "00_fixture" / "unit.toml").write_text('notebook_s = 20\nnbgrader_wrong = ["add__subtracts"]\n')
    release.write_release("00_fixture", solutions, course)
    unit = Unit("00_fixture", solutions, course)
    graded = harness.grade_unit(unit)
    assert graded.packs == {"pack1": {"add": "wrong_add__subtracts"}}
    problems = harness.wrong_answer_problems(unit, graded, "wrong_add__subtracts")
    assert any("the fast path did not grade add__subtracts.py" in p and "ended without a result" in p
               for p in problems), problems
    assert any("did not grade the release's 'add'" in p for p in harness.release_problems(graded))
    assert any("ended without a result (killed by a signal" in p for p in harness.fast_path_problems(unit, graded))
    # the other exercise's fork point is untouched: its wrong answer is rejected, its control gets full marks
    assert harness.wrong_answer_problems(unit, graded, "wrong_softmax__unstable") == []
    assert graded.scores["solution"] == {"add_test": (2.0, 2.0), "softmax_test": (3.0, 3.0)}


def test_a_fork_point_has_left_the_kernels_process_group_before_the_kernel_goes_on(tmp_path):
    """ipykernel SIGKILLs the children left in its process group when it shuts down: the kernel may run on (and end,
    after a short last exercise) only once its new fork point is in a session of its own. The fork point then waits
    for the harness's go, grades, writes its result and exits."""
    import fcntl

    from tests.notebooks import forkpoints

    (tmp_path / "go.lock").touch()
    held = os.open(tmp_path / "go.lock", os.O_RDWR)
    fcntl.flock(held, fcntl.LOCK_EX)
    graded = lambda shell, cells, index, variants, timeout_s: {"v": {"score": 1.0}}  # noqa: E731
    forkpoints._fork_point(None, graded, tmp_path, [], 0, "ex", [{"id": "v"}], 1.0)
    pid = int((tmp_path / "pid-ex").read_text())
    try:
        assert os.getpgid(pid) == pid != os.getpgrp()
    finally:
        fcntl.flock(held, fcntl.LOCK_UN)
        os.close(held)
        _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    assert json.loads((tmp_path / "result-ex.json").read_text()) == {"v": {"score": 1.0}}


def test_an_argument_the_hidden_tests_never_vary_and_stale_insensitive_rows_are_reported(broken):
    """scale(x, k=2)'s hidden tests never vary k, so a scale frozen at k=2 passes; the table's [[insensitive]] rows
    are stale (double's x matters) or name no argument."""
    unit, graded = broken
    text = "\n".join(harness.sensitivity_problems(unit, graded))
    assert "scale: a solution that ignores `k`" in text, text
    assert "scale: a solution that ignores `x`" not in text, text
    assert "[[insensitive]] double: 'x' is stale" in text, text
    assert "[[insensitive]] double: 'y' names no argument" in text, text
