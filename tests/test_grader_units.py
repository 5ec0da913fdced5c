"""Every unit's solution gets full marks through `make grade`, its tests decided by the judge (autograder/judge.py)
except the exercises its unit.toml lists as `in_kernel`, whose reasons must name real exercises.

One sandboxed kernel and one judge per unit (both run the unit's notebook, at the same time): marked `notebook`
and grouped with the unit's other notebook tests."""
from __future__ import annotations

import ast
import tempfile
from pathlib import Path

import nbformat
import pytest

from autograder import nbgrader_course, release
from autograder.grade import grade, load_unit
from autograder.judge import in_kernel
from autograder.sandbox import Limits

REPO = Path(__file__).resolve().parent.parent
UNITS = release.discover_units(release.SOLUTIONS)


@pytest.mark.parametrize("unit", UNITS)
def test_in_kernel_lists_real_exercises_with_reasons(unit):
    loaded = load_unit(unit)
    exercises = {c.grade_id for c in loaded.master if c.kind == "solution"}
    listed = in_kernel(REPO / "solutions" / unit)
    assert set(listed) <= exercises, f"{unit}: in_kernel names {sorted(set(listed) - exercises)}, not exercises"
    assert all(len(why) > 20 for why in listed.values())
    assert loaded.in_kernel == listed


# What turns data the student's code made into native code: the judge must never run it (it runs as the grader's
# uid, outside the sandbox, beside the expected values), so a test that calls these is listed `in_kernel`.
# `compile_kernel` and `compile_tuned` may be called: in the judge their kernels compile and run in the student's
# bare clean room (infopt.grading.guards.native_runner), as tests/test_grading_clean_room.py shows; reading a compiled
# kernel's machine code (`optimized_ir`, `asm()`) raises a HarnessError there (the name `asm` is unit 07's assembler).
NATIVE = {"compile_graph", "jit", "cfunc", "create_mcjit_compiler", "CDLL", "shared_object"}


@pytest.mark.parametrize("unit", UNITS)
def test_no_judged_test_runs_native_code(unit):
    loaded = load_unit(unit)
    for cell in loaded.master:
        if cell.kind != "test" or cell.grade_id[: -len("_test")] in loaded.in_kernel:
            continue
        calls = {node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                 for node in ast.walk(ast.parse(cell.source)) if isinstance(node, ast.Call)}
        assert not calls & NATIVE, (f"{unit}: {cell.grade_id} calls {sorted(calls & NATIVE)} in the judge; list its "
                                    "exercise as [[in_kernel]] in unit.toml (or run that code in a sandbox)")


@pytest.mark.parametrize("unit", [pytest.param(u, marks=[pytest.mark.notebook, pytest.mark.xdist_group(u)])
                                  for u in UNITS])
def test_the_solution_gets_full_marks_through_the_judge(unit, capfd):
    loaded = load_unit(unit)
    folder = Path(tempfile.mkdtemp(prefix=f"judged-{unit}-"))
    uploads = folder / "uploads"
    uploads.mkdir()
    solved = nbgrader_course.make_submission(nbformat.from_dict(loaded.release),
                                             release.build_source_notebook(unit))
    nbformat.write(solved, uploads / "honest.ipynb")
    [record] = grade(unit, uploads, folder / "out", workers=1, quiet=True,
                     limits=Limits(memory_mb=3072, wall_s=900.0, cell_s=300.0))
    failed = [(t["grade_id"], t["message"][:300]) for t in record["tests"] if t["status"] != "pass"]
    assert record["total"] == record["max_total"], (record["reason"], failed)
    # unit 04's npu_schedule solution is a known near-copy of the library (tests/test_grading_copies.py)
    assert record["status"] == "graded" or all("near-copy" in f for f in record["flags"]), record["flags"]
    assert "the judge's run of the instructor's notebook" not in capfd.readouterr().err
