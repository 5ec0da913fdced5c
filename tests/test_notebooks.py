"""Notebook tests, one xdist group per unit (run units in parallel with `-n 2 --dist loadgroup`).

For every unit in solutions/ (and the pipeline's own fixture unit): (a) the solution autogrades to full points
through nbgrader and runs without an error in any cell; (b) the unmodified release scores zero; (c) each stored
wrong answer loses its exercise's points (and, graded through nbgrader, only those); (d) no solution or hidden-test
text reaches course/; (e) course/ is not stale; (f) every exercise has visible and hidden tests and a wrong answer;
(g) no exercise's test reads state another exercise's cells made; (h) the fast path that grades the wrong answers
scores exactly as nbgrader does; (i) every wrong answer fails under each grading seed (one fixed seed in `make test`,
20 in `make proof`); (j) the unit's rule table covers its exercises' text, and each rule's wrong answer is caught
by that rule's check; (k) a solution that ignores any one argument is rejected (tests/notebooks/sensitivity.py). All
of them share one fast-path run and one nbgrader process per unit; the checks themselves live in
tests/notebooks/harness.py, and `make proof` runs this same file with the proof's parameters.
"""
from __future__ import annotations

import functools
import tempfile
import warnings
from pathlib import Path

import pytest

from autograder import release
from tests.notebooks import harness
from tests.notebooks.harness import Unit

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


def _marks(unit: str):
    return [pytest.mark.notebook, pytest.mark.xdist_group(unit)]


def _unit_params():
    return [pytest.param(u, marks=_marks(u), id=u) for u in REAL_UNITS + FIXTURE_UNITS]


def _wrong_params():
    return [pytest.param(u, student, marks=_marks(u), id=f"{u}-{student}")
            for u in REAL_UNITS + FIXTURE_UNITS
            for student in Unit(u, release.SOLUTIONS if u in REAL_UNITS else FIXTURES, release.COURSE).wrong_answers()]


def _ok(name: str, problems: list[str]) -> None:
    assert not problems, f"{name}:\n  " + "\n  ".join(problems[:30])


@pytest.mark.parametrize("name", _unit_params())
def test_every_exercise_has_visible_and_hidden_tests_and_a_wrong_answer(name):
    """(f)"""
    _ok(name, harness.structure_problems(get_unit(name)))


@pytest.mark.parametrize("name", _unit_params())
def test_no_solution_or_hidden_test_text_in_course(name):
    """(d)"""
    _ok(name, harness.leaks(get_unit(name)))


@pytest.mark.parametrize("name", _unit_params())
def test_course_release_is_not_stale(name):
    """(e)"""
    unit = get_unit(name)
    reason = release.stale_reason(name, unit.solutions, unit.course)
    assert reason is None, f"{name}: course/ is stale: {reason}. Run `make release UNIT={name}` and commit course/."


@pytest.mark.parametrize("name", _unit_params())
def test_solution_gets_full_points_and_runs_clean(name):
    """(a) Also warns (never fails: the machine may be loaded) when the solution ran longer than its manifest's
    `notebook_s`."""
    unit = get_unit(name)
    graded = harness.grade_unit(unit)
    _ok(name, harness.solution_problems(graded))
    seconds, target = graded.seconds.get("solution", 0.0), unit.manifest.notebook_s
    if seconds > target:
        warnings.warn(f"{name}: the solution notebook ran {seconds:.0f} s, over its {target:.0f} s target "
                      "(solutions/<U>/unit.toml; or the machine was loaded)", stacklevel=1)


@pytest.mark.parametrize("name", _unit_params())
def test_unmodified_release_gets_zero(name):
    """(b)"""
    _ok(name, harness.release_problems(harness.grade_unit(get_unit(name))))


@pytest.mark.parametrize("name", _unit_params())
def test_exercises_are_independent(name):
    """(g)"""
    _ok(name, harness.dependence_problems(get_unit(name)))


@pytest.mark.parametrize("name", _unit_params())
def test_fast_path_scores_like_nbgrader(name):
    """(h) On every wrong answer graded both ways: one per exercise but the last in `make test` (packed into one
    submission), all of them, each alone, for `full_grading = true` or when INFOPT_FULL_GRADING names the unit."""
    unit = get_unit(name)
    _ok(name, harness.fast_path_problems(unit, harness.grade_unit(unit)))


@pytest.mark.parametrize("name", _unit_params())
def test_every_wrong_answer_fails_under_every_grading_seed(name):
    """(i) Each stored wrong answer is graded under grading seeds 1..INFOPT_GRADING_SEEDS (1 in `make test`, so CI is
    deterministic; 20 in `make proof`) and loses its points in all of them."""
    unit = get_unit(name)
    _ok(name, harness.seed_problems(unit, harness.grade_unit(unit)))


@pytest.mark.parametrize("name", _unit_params())
def test_rule_table_covers_the_text_and_each_rule_is_caught_by_its_check(name):
    """(j) solutions/<U>/rules.toml: every requirement the exercises state has a hidden check and a wrong answer that
    breaks only it (tests/notebooks/rules.py)."""
    unit = get_unit(name)
    _ok(name, harness.rule_problems(unit, harness.grade_unit(unit)))


@pytest.mark.parametrize("name", _unit_params())
def test_every_argument_matters_to_the_hidden_tests(name):
    """(k) A solution that ignores any one argument, or one field of a config argument, loses its points under every
    grading seed (tests/notebooks/sensitivity.py), unless rules.toml says why that argument cannot matter."""
    unit = get_unit(name)
    _ok(name, harness.sensitivity_problems(unit, harness.grade_unit(unit)))


@pytest.mark.parametrize("name,student", _wrong_params())
def test_wrong_answer_loses_exactly_its_exercise(name, student):
    """(c)"""
    unit = get_unit(name)
    _ok(name, harness.wrong_answer_problems(unit, harness.grade_unit(unit), student))
