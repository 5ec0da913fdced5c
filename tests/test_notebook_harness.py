"""The notebook harness must be able to fail: a deliberately broken unit gets every one of its flaws reported."""
from __future__ import annotations

import json
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
