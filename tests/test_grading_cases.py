"""The helpers hidden tests use to stay fair: seeds that are reported and reproducible, named cases that show the
failing input, plain messages for a function that mutates its input or raises, and forbidden names that trip."""
from __future__ import annotations

import numpy as np
import pytest

from infopt.grading import (ForbiddenCall, GradingError, HarnessError, call_student, case, check_equal, forbid,
                            forbidding, grading_rng, grading_seed)


def test_the_seed_comes_from_the_environment_and_reproduces_the_inputs(monkeypatch):
    monkeypatch.setenv("INFOPT_GRADING_SEED", "1234")
    assert grading_seed() == 1234
    a, b = grading_rng().standard_normal(5), grading_rng().standard_normal(5)
    assert np.array_equal(a, b)
    assert not np.array_equal(grading_rng(stream=1).standard_normal(5), a)
    monkeypatch.setenv("INFOPT_GRADING_SEED", "1235")
    assert not np.array_equal(grading_rng().standard_normal(5), a)
    monkeypatch.setenv("INFOPT_GRADING_SEED", "x")
    with pytest.raises(HarnessError, match="not an integer"):
        grading_seed()


def test_a_failing_case_names_itself_the_seed_and_the_input(monkeypatch):
    monkeypatch.setenv("INFOPT_GRADING_SEED", "77")
    with pytest.raises(GradingError) as info:
        with case("random DAG #3", show=lambda: "x = Relu(y)"):
            check_equal(1, 2, name="nodes kept")
    text = str(info.value)
    assert "hidden test 'random DAG #3' failed (grading seed 77)" in text
    assert "x = Relu(y)" in text and "nodes kept: expected 2, got 1" in text
    with pytest.raises(GradingError) as info:
        with case("visible", hidden=False, show=lambda: "z" * 5000):
            check_equal(1, 2)
    assert "grading seed" not in str(info.value) and "…" in str(info.value)
    with pytest.raises(GradingError) as info:  # a value is printed as it is, without wrapping it in a lambda
        with case("an int", show=41):
            check_equal(1, 2)
    assert "input:\n    41\n" in str(info.value), str(info.value)
    with case("passes"):  # no failure, nothing happens
        check_equal(1, 1)


def test_call_student_says_when_the_input_changed_or_the_function_raised():
    def mutates(a):
        a[0] = 9
        return a

    def raises(a):
        raise KeyError("oops")

    with pytest.raises(GradingError, match="mutates changed its input \\(argument 1"):
        call_student(mutates, np.zeros(3))
    with pytest.raises(GradingError, match="raised KeyError on a valid input"):
        call_student(raises, [1], name="raises")
    assert call_student(lambda a: a + 1, np.ones(2)).tolist() == [2.0, 2.0]


def test_forbidden_names_trip_through_every_alias_and_come_back():
    import infopt.passes as P
    import infopt.passes.dce as dce
    from infopt.passes import DeadCodeElimination as early_alias  # bound before the guard, like a student's import

    def student(graph):
        return early_alias()(graph)

    def student_via_module(graph):
        return P.DeadCodeElimination()(graph)

    for fn in (student, student_via_module):
        guarded = forbidding(fn, "infopt.passes.dce:DeadCodeElimination", exercise="dead code elimination")
        with pytest.raises(ForbiddenCall, match="write dead code elimination yourself; your code called "
                                                "infopt.passes.dce.DeadCodeElimination"):
            guarded(None)
    assert P.DeadCodeElimination is dce.DeadCodeElimination and early_alias is dce.DeadCodeElimination
    assert isinstance(ForbiddenCall("x"), GradingError)
    with pytest.raises(HarnessError):
        with forbid("no_colon", exercise="x"):
            pass
