"""The grader's feedback points at the truth (issue 14): a check inside try/finally is reported at its own line, not the
cleanup line; a hidden failure says it was hidden and carries case()'s label, seed and input, never the hidden source."""
import shutil
from pathlib import Path

import pytest

from autograder.grade import grade, load_unit
from autograder.sandbox import Limits
from tests.grader_fixtures.adversarial import cases_for, materialize

pytestmark = pytest.mark.xdist_group("grader")
SOURCE = Path(__file__).parent / "grader_fixtures" / "feedback_unit" / "feedback_unit.py"
LIMITS = Limits(memory_mb=400, pids=64, file_mb=16, cpu_s=30, wall_s=30.0, cell_s=6.0)


@pytest.fixture(scope="module")
def messages(tmp_path_factory) -> dict[tuple[str, str], tuple[str, str]]:
    folder = tmp_path_factory.mktemp("feedback")
    unit = load_unit("feedback_unit", SOURCE)
    decoy = folder / "decoy"
    decoy.mkdir()
    cases = [c for c in cases_for(SOURCE.parent / "wrong") if c.student.startswith("x_")]
    roster = materialize(unit.master, "feedback_unit", folder, decoy, cases)
    records = grade("feedback_unit", folder / "uploads", folder / "out", roster, workers=1, limits=LIMITS,
                    source=SOURCE, quiet=True)
    shutil.rmtree(decoy)
    return {(r["student"], t["grade_id"]): (t["status"], t["message"]) for r in records for t in r["tests"]}


def test_a_visible_check_inside_try_finally_is_shown_at_its_own_line(messages):
    status, message = messages[("x_f__off_by_two", "f_test")]
    assert status == "fail"
    assert message.startswith('line 3: `check_equal(f(1), 2, name="f(1)")`'), message
    assert "expected 2, got 3" in message and "_saved" not in message


def test_a_hidden_failure_is_labelled_with_its_case_seed_and_input_and_no_source(messages):
    status, message = messages[("x_g__triples", "g_test")]
    assert status == "fail" and message.startswith("a hidden test failed"), message
    assert "hidden test 'g of a drawn x' failed (grading seed" in message, message
    assert "input:" in message and "could not print" not in message, message
    for hidden in ("_saved", "grading_rng", "try:", "finally"):
        assert hidden not in message, (hidden, message)


def test_the_other_exercise_keeps_its_points(messages):
    assert messages[("x_f__off_by_two", "g_test")][0] == "pass"
    assert messages[("x_g__triples", "f_test")][0] == "pass"


def test_scrubber_masks_hidden_code_but_shows_a_test_input_whole():
    """A line of hidden-test code is masked wherever it appears; a line of a multi-line string in a hidden test is
    the case's input, which the failure shows on purpose, so it is never masked."""
    from autograder.scrub import Scrubber, secret_lines

    cell = ('check_true(True, "visible")\n'
            '### BEGIN HIDDEN TESTS\n'
            'program = """\n'
            '%c2 = arith.constant 2 : index\n'
            '"""\n'
            '_reference_answer = sorted(compute_expected_rows(program, strict=True))\n'
            '### END HIDDEN TESTS\n')
    secret = secret_lines([cell])
    assert "%c2 = arith.constant 2 : index" not in secret
    scrub = Scrubber(secret)
    shown = "input:\n    %c2 = arith.constant 2 : index\n"
    assert scrub(shown) == shown
    leaked = "_reference_answer = sorted(compute_expected_rows(program, strict=True))"
    assert scrub(f"x {leaked} y") == "x [hidden] y"
