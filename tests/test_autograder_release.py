"""Tests for autograder.release and autograder.nbgrader_course: source rules, determinism, staleness, submissions."""
from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import nbformat
import pytest

from autograder import nbgrader_course as nc
from autograder import release

HEADER = textwrap.dedent("""\
    # ---
    # jupyter:
    #   kernelspec:
    #     display_name: Python 3 (ipykernel)
    #     language: python
    #     name: python3
    # ---
    """)
FIXTURES = Path(__file__).parent / "notebooks" / "fixtures" / "solutions"


def _unit(tmp_path: Path, body: str, name: str = "99_tmp") -> Path:
    d = tmp_path / "solutions" / name
    d.mkdir(parents=True)
    (d / f"{name}.py").write_text(HEADER + "\n" + textwrap.dedent(body))
    return tmp_path / "solutions"


GOOD = """\
    # %% [markdown]
    # Hello

    # %% solution=true grade_id="f"
    def f(x):
        ### BEGIN SOLUTION
        return x + 1
        ### END SOLUTION

    # %% grade_id="f_test" points=2
    assert f(1) == 2
    ### BEGIN HIDDEN TESTS
    assert f(2) == 3
    ### END HIDDEN TESTS
    """


def test_source_notebook_gets_nbgrader_metadata(tmp_path):
    nb = release.build_source_notebook("99_tmp", _unit(tmp_path, GOOD))
    md, sol, test = nb.cells
    assert md.metadata["nbgrader"]["locked"] is True and md.metadata["nbgrader"]["schema_version"] == 3
    assert sol.metadata["nbgrader"] == {"grade": False, "grade_id": "f", "locked": False, "schema_version": 3,
                                        "solution": True, "task": False}
    assert test.metadata["nbgrader"]["points"] == 2 and test.metadata["nbgrader"]["grade"] is True
    assert "jupytext" not in nb.metadata and all("lines_to_next_cell" not in c.metadata for c in nb.cells)
    assert [c.id for c in nb.cells] == ["cell-000", "f", "f-test"]


@pytest.mark.parametrize("body,needle", [
    ('# %% solution=true grade_id="f" colour="red"\nx = 1\n', "unknown cell metadata"),
    ('# %% solution=true grade_id="F-1"\n### BEGIN SOLUTION\nx = 1\n### END SOLUTION\n', "lowercase"),
    ('# %% solution=true grade_id="f"\nx = 1\n', "BEGIN SOLUTION"),
    ('# %% grade_id="f_test" points=1.5\nassert True\n', "positive integer"),
    ('# %% grade_id="f" points=1\nassert True\n', "_test"),
    ('# %%\n### BEGIN HIDDEN TESTS\nx = 1\n### END HIDDEN TESTS\n', "only allowed"),
    ('# %% grade_id="g_test" points=1\nassert 1\n\n# %% grade_id="g_test" points=1\nassert 1\n', "used twice"),
])
def test_bad_sources_are_rejected_with_a_named_cell(tmp_path, body, needle):
    with pytest.raises(release.SourceError, match=needle) as info:
        release.build_source_notebook("99_tmp", _unit(tmp_path, body))
    assert "99_tmp: cell" in str(info.value)


def test_release_is_deterministic_copies_data_and_detects_staleness(tmp_path, capsys):
    sols = _unit(tmp_path, GOOD)
    (sols / "99_tmp" / "data").mkdir()
    (sols / "99_tmp" / "data" / "table.txt").write_text("1 2 3\n")
    course = tmp_path / "course"
    args = ["--solutions", str(sols), "--course", str(course)]
    assert release.main(args + ["--check"]) == 1                       # missing
    assert release.main(args) == 0
    nb_path = course / "99_tmp" / "99_tmp.ipynb"
    first = nb_path.read_bytes()
    assert (course / "99_tmp" / "data" / "table.txt").read_text() == "1 2 3\n"
    text = first.decode()
    assert "return x + 1" not in text and "f(2) == 3" not in text and "raise NotImplementedError()" in text
    assert release.main(args + ["--check"]) == 0
    assert release.main(args) == 0
    assert nb_path.read_bytes() == first, "rebuilding must give a byte-identical notebook"

    nb_path.write_text(text.replace("Hello", "Hello!"))                 # a hand edit of course/
    assert "edited by hand" in release.stale_reason("99_tmp", sols, course)
    assert release.main(args + ["--check"]) == 1
    assert "stale: 99_tmp" in capsys.readouterr().err
    assert release.main(args + ["--if-stale"]) == 0                    # a student's work is kept...
    assert "Hello!" in nb_path.read_text() and "keeping your edited" in capsys.readouterr().out
    assert release.main(args) == 0                                      # ...until a forced rebuild
    assert nb_path.read_bytes() == first
    assert list((tmp_path / "build" / "release-backups").glob("99_tmp-*.ipynb")), "the edited copy is kept"
    orphan = course / "98_gone" / "98_gone.ipynb"
    orphan.parent.mkdir()
    orphan.write_text("{}")
    assert release.main(args + ["--check"]) == 1 and "98_gone" in capsys.readouterr().err
    shutil.rmtree(orphan.parent)

    src = sols / "99_tmp" / "99_tmp.py"                                 # a source edit
    src.write_text(src.read_text().replace("# Hello", "# Hello again"))
    assert "sources" in release.stale_reason("99_tmp", sols, course)
    (sols / "99_tmp" / "data" / "table.txt").write_text("4\n")
    assert release.main(args + ["--if-stale"]) == 0
    assert release.stale_reason("99_tmp", sols, course) is None
    assert (course / "99_tmp" / "data" / "table.txt").read_text() == "4\n"


def test_unknown_unit_is_an_error(tmp_path):
    with pytest.raises(SystemExit):
        release.main(["--solutions", str(_unit(tmp_path, GOOD)), "--course", str(tmp_path / "c"), "--unit", "nope"])


def test_make_submission_fills_solutions_and_overrides(tmp_path):
    sols = _unit(tmp_path, GOOD)
    src = release.build_source_notebook("99_tmp", sols)
    rel = nbformat.from_dict(nbformat.v4.new_notebook(cells=[nbformat.from_dict(dict(c)) for c in src.cells]))
    rel.cells[1].source = "def f(x):\n    raise NotImplementedError()"
    filled = nc.make_submission(rel, src)
    assert filled.cells[1].source == "def f(x):\n    return x + 1"
    wrong = nc.make_submission(rel, src, {"f": "def f(x):\n    return x"})
    assert wrong.cells[1].source == "def f(x):\n    return x"
    assert rel.cells[1].source.endswith("NotImplementedError()"), "the release itself is not modified"
    with pytest.raises(KeyError, match="no solution cell"):
        nc.make_submission(rel, src, {"g": "x = 1"})


def test_stalled_cells_reads_execution_timestamps():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1"), nbformat.v4.new_code_cell("2")])
    nb.cells[0].metadata["execution"] = {"iopub.status.idle": "2026-01-01T00:00:01.000Z",
                                         "shell.execute_reply": "2026-01-01T00:00:01.010Z"}
    nb.cells[1].metadata["execution"] = {"iopub.status.idle": "2026-01-01T00:00:02.000Z",
                                         "shell.execute_reply": "2026-01-01T00:00:32.000Z"}
    assert nc.stalled_cells(nb, 5.0) == [(1, 30.0)]


def test_place_submission_rejects_odd_student_ids(tmp_path):
    with pytest.raises(ValueError, match="student id"):
        nc.place_submission(tmp_path, "u", "../evil", nbformat.v4.new_notebook())


def test_fixture_units_are_discovered():
    assert release.discover_units(FIXTURES) == ["00_fixture"]
    assert shutil.which("nbgrader", path=str(Path(__import__("sys").executable).parent))
