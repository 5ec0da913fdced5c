"""Notebook tests, one xdist group per unit (run units in parallel with `-n 2 --dist loadgroup`).

For every unit in solutions/ (and the pipeline's own fixture unit): (a) the solution autogrades to full points
and runs without an error in any cell; (b) the unmodified release scores zero; (c) each stored wrong answer
loses its exercise's points and only those; (d) no solution or hidden-test text reaches course/; (e) course/ is
not stale; (f) every exercise has visible and hidden tests and a wrong answer. (a)-(c) share ONE nbgrader
autograde run per unit (tests/notebooks/harness.py).
"""
from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import pytest

from autograder import release
from tests.notebooks.harness import Unit, course_lines, exercises, grade_unit, secret_and_public_lines, MARKERS

FIXTURES = Path(__file__).parent / "notebooks" / "fixtures" / "solutions"
FIXTURE_UNITS = release.discover_units(FIXTURES)
REAL_UNITS = release.discover_units(release.SOLUTIONS)


@functools.cache
def get_unit(name: str) -> Unit:
    """A real unit (solutions/, course/) or a fixture unit released once into a temp course dir."""
    if name in REAL_UNITS:
        return Unit(name, release.SOLUTIONS, release.COURSE)
    course = Path(tempfile.mkdtemp(prefix="fixture-course-"))
    release.write_release(name, FIXTURES, course)
    return Unit(name, FIXTURES, course)


def _source_dir(name: str) -> Path:
    return release.SOLUTIONS if name in REAL_UNITS else FIXTURES


def _unit_params():
    return [pytest.param(u, marks=[pytest.mark.notebook, pytest.mark.xdist_group(u)], id=u)
            for u in REAL_UNITS + FIXTURE_UNITS]


def _wrong_params():
    out = []
    for u in REAL_UNITS + FIXTURE_UNITS:
        for student in Unit(u, _source_dir(u), release.COURSE).wrong_answers():
            out.append(pytest.param(u, student, marks=[pytest.mark.notebook, pytest.mark.xdist_group(u)],
                                    id=f"{u}-{student}"))
    return out


@pytest.mark.parametrize("name", _unit_params())
def test_every_exercise_has_visible_and_hidden_tests_and_a_wrong_answer(name):
    """(f) One <ex>_test cell per exercise, with visible asserts and hidden tests; >= 1 stored wrong answer."""
    unit = get_unit(name)
    exs = exercises(release.build_source_notebook(name, unit.solutions))
    assert exs, f"{name}: no graded exercise (a cell with solution=true)"
    wrong = {ex for ex, _ in unit.wrong_answers().values()}
    problems = []
    for ex, info in sorted(exs.items()):
        if info.get("orphan_test"):
            problems.append(f"test cell {info['test']!r} has no solution cell {ex!r}")
        elif info["test"] is None:
            problems.append(f"exercise {ex!r} has no test cell {ex + '_test'!r}")
        else:
            if not info["visible"]:
                problems.append(f"{info['test']}: no visible test lines before ### BEGIN HIDDEN TESTS")
            if not info["hidden"]:
                problems.append(f"{info['test']}: no hidden tests (### BEGIN/END HIDDEN TESTS)")
        if ex not in wrong and not info.get("orphan_test"):
            problems.append(f"exercise {ex!r} has no stored wrong answer solutions/{name}/wrong/{ex}__<slug>.py")
    for ex in wrong - set(exs):
        problems.append(f"a stored wrong answer names exercise {ex!r}, which does not exist")
    assert not problems, f"{name}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("name", _unit_params())
def test_no_solution_or_hidden_test_text_in_course(name):
    """(d) No marker text, no solution line and no hidden-test line anywhere in course/."""
    unit = get_unit(name)
    sol, hidden, _ = secret_and_public_lines(release.build_source_notebook(name, unit.solutions))
    leaks = []
    for path, lines in course_lines(unit.course).items():
        text = "\n".join(lines)
        leaks += [f"{path}: marker {m!r}" for m in MARKERS if m in text]
        leaks += [f"{path}: solution line {ln!r}" for ln in sorted(sol & lines)]
        leaks += [f"{path}: hidden-test line {ln!r}" for ln in sorted(hidden & lines)]
    assert not leaks, f"{name}: secret text in course/:\n  " + "\n  ".join(leaks[:30])


@pytest.mark.parametrize("name", _unit_params())
def test_course_release_is_not_stale(name):
    """(e) course/<U>/<U>.ipynb matches its sources and was not edited by hand."""
    unit = get_unit(name)
    reason = release.stale_reason(name, unit.solutions, unit.course)
    assert reason is None, f"{name}: course/ is stale: {reason}. Run `make release UNIT={name}` and commit course/."


@pytest.mark.parametrize("name", _unit_params())
def test_solution_gets_full_points_and_runs_clean(name):
    """(a) The instructor's solution earns every autograded point; no cell raises; no nbclient#312 stall."""
    g = grade_unit(get_unit(name))
    scores = g.scores.get("solution")
    assert scores, f"{name}: the solution was not graded (see the nbgrader output)"
    lost = {gid: s for gid, s in scores.items() if s[0] != s[1]}
    assert not lost, (f"{name}: the solution lost points on {lost} (score, max); cell errors: "
                      f"{g.errors.get('solution')}. A test cell that prints to stderr also scores 0.")
    assert not g.errors.get("solution"), f"{name}: cells raised when run from the solutions: {g.errors['solution']}"
    stalls = {s: v for s, v in g.stalls.items() if v}
    assert not stalls, f"{name}: cells stalled (jupyter/nbclient#312?) {stalls} (cell index, seconds)"


@pytest.mark.parametrize("name", _unit_params())
def test_unmodified_release_gets_zero(name):
    """(b) The release as students get it scores zero on every autograded cell."""
    g = grade_unit(get_unit(name))
    scores = g.scores.get("release")
    assert scores, f"{name}: the release was not graded"
    given = {gid: s for gid, s in scores.items() if s[0] != 0}
    assert not given, f"{name}: the unmodified release earned points on {given}: these tests pass without any work"


@pytest.mark.parametrize("name,student", _wrong_params())
def test_wrong_answer_loses_exactly_its_exercise(name, student):
    """(c) A submission with one stored wrong answer loses <ex>_test's points and keeps every other test's."""
    unit = get_unit(name)
    ex, path = unit.wrong_answers()[student]
    g = grade_unit(unit)
    scores = g.scores.get(student)
    assert scores, f"{name}: {path.name} was not graded"
    target = f"{ex}_test"
    assert target in scores, f"{name}: {path.name} names exercise {ex!r} but there is no test cell {target!r}"
    assert scores[target][0] == 0, (f"{name}: the wrong answer {path.name} still earns {scores[target]} on "
                                    f"{target}: make the (hidden) tests catch it")
    others = {gid: s for gid, s in scores.items() if gid != target and s[0] != s[1]}
    assert not others, (f"{name}: the wrong answer {path.name} for {ex!r} also loses points on {others}: "
                        "exercises must not depend on each other's student code")
