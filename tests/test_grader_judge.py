"""The judge (autograder/judge.py) on the toy unit, with the kernel's side played by `serve` in a thread: verdicts,
failures with their test line and the student's frames, a kernel that goes away, a judge that dies, the seed."""
from __future__ import annotations

import os
import signal
import socket
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from autograder.grade import load_unit
from autograder.judge import Judge, defined_names, run_test
from infopt.grading.remote import serve_on

pytestmark = pytest.mark.xdist_group("grader")
TOY = Path(__file__).parent / "grader_fixtures" / "toy_unit" / "toy_unit.py"


@pytest.fixture(scope="module")
def judge(tmp_path_factory):
    unit = load_unit("toy_unit", TOY)
    with Judge(unit.master, unit.files, tmp_path_factory.mktemp("judge")) as j:
        yield j


def judged(judge: Judge, exercise: str, namespace: dict, seed: int = 1, hang_up: bool = False) -> dict:
    """The judge's verdict on `exercise` when the kernel's functions are those of `namespace`."""
    ours, theirs = socket.socketpair()
    if hang_up:
        theirs.close()
    else:
        threading.Thread(target=serve_on, args=(theirs, namespace), daemon=True).start()
    verdict = run_test(judge.folder, exercise, ours, seed, 60, judge.proc.pid)
    ours.close()
    return verdict


def scale(x, k):
    return np.asarray(x, dtype=np.float64) * k


def test_defined_names_of_a_solution_cell():
    assert defined_names("import x\ndef f(): pass\nclass C: pass\na, (b, c) = 1, (2, 3)\nf()\n") == ["f", "C", "a", "b",
                                                                                                     "c"]


def test_a_correct_function_passes_and_the_calls_crossed(judge):
    verdict = judged(judge, "scale", {"scale": scale})
    assert verdict["status"] == "ok" and verdict["calls"] >= 3, verdict


def test_a_wrong_function_fails_on_a_hidden_line_with_the_checks_message(judge):
    verdict = judged(judge, "scale", {"scale": lambda x, k: np.asarray(x, dtype=np.float64) * abs(k)})
    assert verdict["status"] == "error" and verdict["ename"] == "GradingError", verdict
    assert "scale(random 4x5, -3)" in verdict["evalue"] and verdict["line"] > 2


def test_the_students_error_comes_back_with_the_students_frames(judge):
    def scale(x, k):
        raise ZeroDivisionError("mine")

    verdict = judged(judge, "scale", {"scale": scale})
    assert verdict["ename"] == "ZeroDivisionError" and "mine" in verdict["evalue"], verdict
    assert any(frame[2] == "scale" for frame in verdict["frames"]), verdict["frames"]


def test_a_kernel_that_hangs_up_fails_the_test_plainly(judge):
    verdict = judged(judge, "scale", {}, hang_up=True)
    assert verdict["status"] == "error" and "stopped answering" in verdict["evalue"], verdict


def test_a_judge_child_is_capped_like_the_sandbox():
    """A judge child cannot grow far past its fork point (whatever the kernel's data makes the library do)."""
    import subprocess
    import sys

    code = ("from autograder.judge import _limit_self\n_limit_self(30, 200)\n"
            "try:\n    block = bytearray(600 * 2**20)\nexcept MemoryError:\n    print('capped')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).resolve().parent.parent)
    assert out.stdout.strip() == "capped", out.stdout + out.stderr


def test_a_missing_function_fails_naming_it(judge):
    verdict = judged(judge, "order", {})
    assert verdict["status"] == "error" and "not defined" in verdict["evalue"], verdict


def test_a_judge_that_died_is_a_harness_error_at_once(tmp_path):
    unit = load_unit("toy_unit", TOY)
    with Judge(unit.master, unit.files, tmp_path / "j") as j:
        os.killpg(j.proc.pid, signal.SIGKILL)
        j.proc.wait(10)
        for ready in j.folder.glob("fp-*.ready"):
            ready.unlink()
        a, b = socket.socketpair()
        started = time.monotonic()
        verdict = run_test(j.folder, "scale", a, 1, 60, j.proc.pid)
        assert verdict.get("harness") and "ended before" in verdict["evalue"], verdict
        assert time.monotonic() - started < 10
        a.close()
        b.close()
