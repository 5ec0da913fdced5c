"""autograder.scoring: pass/fail on the execute reply alone, harness errors and canaries kept apart, no hidden source."""
import pytest

from autograder.assemble import GradedCell
from autograder.scoring import failure_message, own_lines, score

pytestmark = pytest.mark.xdist_group("grader")

TEST_SOURCE = "check_equal(f(1), 2)\n### BEGIN HIDDEN TESTS\nsecret_value = 41\nassert f(secret_value) == 42\n### END HIDDEN TESTS"


def cells():
    return [GradedCell("solution", "def f(x): return x + 1", "f"),
            GradedCell("test", TEST_SOURCE, "f_test", 2.0, "instructor", (2, 5)),
            GradedCell("solution", "def g(x): return x", "g"),
            GradedCell("test", "assert g(1) == 1", "g_test", 3.0, "instructor", None)]


def result(index, status="ok", **extra):
    return {"index": index, "status": status, "ename": "", "evalue": "", "traceback": "", "seconds": 0.1, **extra}


def test_stderr_output_does_not_matter_only_the_reply():
    run = {"results": [result(0), result(1, output="Warning: something on stderr"), result(2), result(3)]}
    record = score("s", cells(), run, [], [])
    assert record["status"] == "graded" and record["total"] == 5.0 and record["max_total"] == 5.0
    assert record["exercises"] == {"f": {"score": 2.0, "max": 2.0}, "g": {"score": 3.0, "max": 3.0}}


def test_hidden_failure_message_does_not_show_hidden_source():
    tb = "AssertionError Traceback\nCell In[7], line 4\n      3 secret_value = 41\n----> 4 assert f(secret_value) == 42"
    message = failure_message(cells()[1], result(1, "error", ename="AssertionError", traceback=tb))
    assert message.startswith("a hidden test failed") and "secret_value" not in message
    visible = failure_message(cells()[1], result(1, "error", ename="GradingError", evalue="f(1): expected 2, got 3",
                                                 traceback="Cell In[7], line 1"))
    assert "line 1: `check_equal(f(1), 2)`" in visible and "expected 2, got 3" in visible


def test_harness_error_is_not_the_students_fault():
    run = {"results": [result(0), result(1, "error", ename="HarnessError", evalue="bug"), result(2), result(3)]}
    record = score("s", cells(), run, [], [])
    assert record["status"] == "error" and "harness" in record["reason"] and record["total"] == 3.0


def test_canary_failure_voids_the_test_and_flags():
    run = {"results": [result(0), result(1, canary="assert ... reported ok"), result(2), result(3)]}
    record = score("s", cells(), run, [], [])
    assert record["status"] == "flagged" and record["total"] == 3.0
    assert record["tests"][0]["status"] == "untrusted" and "canary" in record["flags"][0]


def test_kernel_death_keeps_earlier_credit_and_says_where():
    run = {"results": [result(0), result(1), result(2, "died", evalue="out of memory (limit 300 MB)"),
                       result(3, "not_run", evalue="kernel died at cell 2: out of memory (limit 300 MB)")],
           "events": ["kernel died at cell 2: out of memory (limit 300 MB)"]}
    record = score("s", cells(), run, [], [])
    assert record["status"] == "graded" and record["total"] == 2.0
    assert "kernel died at cell 2" in record["reason"]
    assert "not run" in record["tests"][1]["message"]


def test_infrastructure_failure_is_an_error_not_a_zero():
    record = score("s", cells(), {"results": [], "events": ["the kernel did not start"], "infrastructure_error": True},
                   [], [])
    assert record["status"] == "error" and "did not start" in record["reason"]


def test_a_changed_checker_or_a_missing_verdict_voids_the_test_and_flags():
    run = {"results": [result(0), result(1, tamper="numpy.testing.assert_allclose"), result(2),
                       result(3, "no_verdict", evalue="the kernel gave no signed verdict")],
           "flags": ["the kernel's execute reply for g_test said 'ok' but the grader's signed verdict was a failure"]}
    record = score("s", cells(), run, [], [])
    assert record["status"] == "flagged" and record["total"] == 0.0
    assert [t["status"] for t in record["tests"]] == ["untrusted", "no_verdict"]
    assert "assert_allclose" in record["tests"][0]["message"] and "no verdict" in record["tests"][1]["message"]
    assert any("checking machinery" in f for f in record["flags"])
    assert any("execute reply" in f for f in record["flags"])


def test_failure_message_shows_only_the_students_own_frames():
    source = "def f(x):\n    return helper(x)\ndef helper(x):\n    raise ValueError('bad')"
    student = GradedCell("solution", source, "f")
    frames = [["/tmp/ipykernel_1/2.py", 2, "f", "return helper(x)"],
              ["/tmp/ipykernel_1/2.py", 4, "helper", "raise ValueError('bad')"],
              ["/venv/site-packages/numpy/core.py", 10, "inner", "raise ValueError(msg)"],
              ["<grading test f_test>", 3, "<listcomp>", "secret_value = 41"]]
    hidden = result(1, "error", ename="ValueError", evalue="bad", line=3, frames=frames)
    message = failure_message(cells()[1], hidden, own_lines([student]))
    assert message.startswith("a hidden test failed — ValueError: bad")
    assert "in helper() at `raise ValueError('bad')`" in message
    assert "numpy" not in message and "secret_value" not in message and "<grading" not in message
    visible = failure_message(cells()[1], result(1, "error", ename="GradingError", evalue="expected 2", line=1))
    assert visible == "line 1: `check_equal(f(1), 2)` — GradingError: expected 2"
