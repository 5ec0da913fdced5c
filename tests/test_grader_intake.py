"""autograder.intake and autograder.assemble: only the notebook is taken, broken ones get a status, metadata is restored."""
import copy
import io
import json
import os
import zipfile
from pathlib import Path

import pytest

from autograder.assemble import assemble, load_master, master_from_cells, release_notebook
from autograder.intake import find_submissions, load_roster, parse_notebook, safe_id
from tests.grader_fixtures.adversarial import tar_bytes

pytestmark = pytest.mark.xdist_group("grader")
TOY = Path(__file__).parent / "grader_fixtures" / "toy_unit" / "toy_unit.py"


@pytest.fixture(scope="module")
def master():
    return load_master(TOY)


def write_nb(path: Path, nb: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb))


def test_roster_formats(tmp_path):
    (tmp_path / "a.csv").write_text("name,id\nAl,al1\nBo,bo2\n")
    assert load_roster(tmp_path / "a.csv") == ["al1", "bo2"]
    (tmp_path / "b.csv").write_text("al1\nbo2\n")
    assert load_roster(tmp_path / "b.csv") == ["al1", "bo2"]
    (tmp_path / "c.csv").write_text("id\nx\nx\n")
    with pytest.raises(ValueError, match="more than once"):
        load_roster(tmp_path / "c.csv")
    with pytest.raises(FileNotFoundError, match="roster"):
        load_roster(tmp_path / "none.csv")
    assert safe_id("../../etc") == "_.._etc" and "/" not in safe_id("a/b")


def test_parse_rejects_what_cannot_be_graded(master):
    good = release_notebook(master)
    assert parse_notebook(json.dumps(good).encode())[1] == ""
    assert "not valid JSON" in parse_notebook(b'{"cells": [')[1]
    assert "nbformat 5" in parse_notebook(json.dumps({**good, "nbformat": 5}).encode())[1]
    assert "not UTF-8" in parse_notebook(b"\xff\xfe\x00")[1]
    assert "no list of cells" in parse_notebook(b"[1, 2]")[1]
    bad = copy.deepcopy(good)
    bad["cells"][1]["cell_type"] = "python"
    assert "cell 1 is malformed" in parse_notebook(json.dumps(bad).encode())[1]


def test_lms_uploads_zip_rename_missing_and_unlisted(tmp_path, master):
    nb = release_notebook(master, solved=True)
    write_nb(tmp_path / "amy_attempt2.ipynb", nb)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("work/renamed.ipynb", json.dumps(nb))
        archive.writestr("work/numpy.py", "raise SystemExit")
        archive.writestr("__MACOSX/._renamed.ipynb", "junk")
    (tmp_path / "ben.zip").write_bytes(buffer.getvalue())
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("a.ipynb", "{}")
        archive.writestr("b.ipynb", "{}")
    (tmp_path / "cat.zip").write_bytes(buffer.getvalue())
    (tmp_path / "dan.zip").write_bytes(b"not a zip")
    write_nb(tmp_path / "eve.ipynb", nb)
    (tmp_path / "roster.csv").write_text("id\namy\nben\ncat\ndan\nfay\n")
    found = find_submissions(tmp_path, "toy_unit", load_roster(tmp_path / "roster.csv"))
    assert list(found) == ["amy", "ben", "cat", "dan", "fay", "eve"]
    assert found["amy"].status == "ok"
    assert found["ben"].status == "ok" and found["ben"].shipped == ["work/numpy.py"]
    assert any("renamed" in n for n in found["ben"].notes)
    assert found["cat"].status == "error" and "2 notebooks" in found["cat"].message
    assert found["dan"].status == "error" and "zip" in found["dan"].message
    assert found["fay"].status == "missing"
    assert found["eve"].status == "ok" and "not on the roster" in found["eve"].notes[-1]


def test_nbgrader_tree_takes_only_the_notebook(tmp_path, master):
    nb = release_notebook(master, solved=True)
    write_nb(tmp_path / "submitted" / "s1" / "toy_unit" / "toy_unit.ipynb", nb)
    (tmp_path / "submitted" / "s1" / "toy_unit" / "numpy.py").write_text("x = 1")
    write_nb(tmp_path / "submitted" / "s2" / "toy_unit" / "other.ipynb", nb)
    (tmp_path / "submitted" / "s3" / "toy_unit").mkdir(parents=True)
    found = find_submissions(tmp_path, "toy_unit")
    assert found["s1"].status == "ok" and found["s1"].shipped == ["numpy.py"]
    assert found["s2"].status == "ok" and "renamed" in found["s2"].notes[0]
    assert found["s3"].status == "error" and "no notebook" in found["s3"].message


def test_assemble_restores_tests_metadata_and_deleted_cells(master):
    nb = release_notebook(master, solved=True)
    tests = [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade")]
    tests[0]["source"] = "pass  # the student emptied the test"
    tests[0]["metadata"]["nbgrader"].update(points=99, schema_version=1)
    solutions = [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("solution")]
    solutions[1]["metadata"] = {}
    nb["cells"].remove(tests[1])
    nb["cells"].append({**copy.deepcopy(solutions[0]), "id": "copy"})  # a duplicated graded cell
    release = release_notebook(master)
    cells, notes = assemble(nb, master, release)
    test_cells = [c for c in cells if c.kind == "test"]
    assert [c.grade_id for c in test_cells] == ["scale_test", "order_test"]
    assert [c.points for c in test_cells] == [2.0, 3.0]
    assert all("HIDDEN TESTS" in c.source for c in test_cells)
    positions = {c.grade_id: i for i, c in enumerate(cells) if c.grade_id}
    assert positions["order"] < positions["order_test"]  # put back after its solution
    assert [c.kind for c in cells].count("solution") == 2
    joined = " ".join(notes)
    for word in ("edited nbgrader metadata", "restored the original", "was deleted", "appears twice",
                 "metadata was missing"):
        assert word in joined, (word, notes)


def test_assemble_deleted_solution_becomes_the_stub(master):
    nb = release_notebook(master, solved=True)
    nb["cells"] = [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") != "scale"]
    cells, notes = assemble(nb, master, release_notebook(master))
    scale = next(c for c in cells if c.grade_id == "scale")
    assert "NotImplementedError" in scale.source and scale.author == "instructor"
    assert any("scale was deleted" in n for n in notes)


def test_a_locked_text_cell_stays_text_and_is_never_run():
    """A locked markdown cell (nbgrader readonly) is text in the release and in grading, even turned into code."""
    locked = {"nbgrader": {"locked": True, "grade": False, "solution": False, "grade_id": "intro",
                           "schema_version": 3}}
    cells = [{"cell_type": "markdown", "metadata": locked, "source": "raise SystemExit('text run as code')"},
             {"cell_type": "code", "metadata": {"nbgrader": {"solution": True, "grade": False, "grade_id": "f",
                                                            "schema_version": 3}},
              "source": "def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION"},
             {"cell_type": "code", "metadata": {"nbgrader": {"grade": True, "solution": False, "locked": True,
                                                            "grade_id": "f_test", "points": 1, "schema_version": 3}},
              "source": "assert f() == 1"}]
    master = master_from_cells(cells)
    assert master[0].kind == "readonly" and master[0].cell_type == "markdown"
    release = release_notebook(master)
    assert release["cells"][0]["cell_type"] == "markdown"
    submitted = copy.deepcopy(release)
    submitted["cells"][0].update(cell_type="code", outputs=[], execution_count=None)
    graded, _ = assemble(submitted, master, release)
    assert graded[0].kind == "markdown", "a text cell turned into code must not run"


def test_a_deleted_locked_code_cell_is_put_back_as_code():
    """A locked setup cell the student deleted runs again (its imports are what the tests after it need)."""
    locked = {"nbgrader": {"locked": True, "grade": False, "solution": False, "grade_id": "setup",
                           "schema_version": 3}}
    cells = [{"cell_type": "code", "metadata": locked, "source": "import math"},
             {"cell_type": "code", "metadata": {"nbgrader": {"grade": True, "solution": False, "locked": True,
                                                            "grade_id": "t_test", "points": 1, "schema_version": 3}},
              "source": "assert math.pi > 3"}]
    master = master_from_cells(cells)
    release = release_notebook(master)
    submitted = copy.deepcopy(release)
    del submitted["cells"][0]
    graded, notes = assemble(submitted, master, release)
    assert [(c.kind, c.author, c.source) for c in graded][0] == ("readonly", "instructor", "import math")
    assert any("setup was deleted; put back from the source" in n for n in notes), notes


def _zip_bytes(files: dict, links: dict | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(zipfile.ZipInfo(name), data)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o120777 << 16
            archive.writestr(info, target)
    return buffer.getvalue()


def test_links_anywhere_on_the_path_or_inside_are_refused(tmp_path, master):
    nb = json.dumps(release_notebook(master, solved=True))
    secret = tmp_path / "instructor" / "toy_unit.ipynb"
    secret.parent.mkdir()
    secret.write_text(nb)
    sub = tmp_path / "course" / "submitted"
    write_nb(sub / "own" / "toy_unit" / "toy_unit.ipynb", json.loads(nb))
    (sub / "linked_student").symlink_to(sub / "own")                          # a student folder that is a link
    (sub / "linked_unit").mkdir()
    (sub / "linked_unit" / "toy_unit").symlink_to(sub / "own" / "toy_unit")  # a unit folder that is a link
    (sub / "linked_nb" / "toy_unit").mkdir(parents=True)
    (sub / "linked_nb" / "toy_unit" / "toy_unit.ipynb").symlink_to(secret)  # the notebook is a link
    write_nb(sub / "link_inside" / "toy_unit" / "toy_unit.ipynb", json.loads(nb))
    (sub / "link_inside" / "toy_unit" / "data").symlink_to("/etc")
    found = find_submissions(tmp_path / "course", "toy_unit")
    assert found["own"].status == "ok"
    for student in ("linked_student", "linked_unit", "linked_nb"):
        assert found[student].status == "error" and "symbolic link" in found[student].message, found[student]
    assert found["link_inside"].status == "error" and "symbolic links (data)" in found["link_inside"].message
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "submitted").symlink_to(sub)
    with pytest.raises(ValueError, match="symbolic link"):
        find_submissions(tmp_path / "other", "toy_unit")
    (tmp_path / "lms").mkdir()
    (tmp_path / "lms" / "amy.ipynb").symlink_to(secret)
    assert "symbolic link" in find_submissions(tmp_path / "lms", "toy_unit")["amy"].message


def test_unsafe_archives_are_refused_and_tar_uploads_are_read(tmp_path, master):
    nb = json.dumps(release_notebook(master, solved=True)).encode()
    uploads = {"zlink.zip": _zip_bytes({"toy_unit.ipynb": nb}, {"data": "/etc/passwd"}),
               "zdots.zip": _zip_bytes({"../toy_unit.ipynb": nb}),
               "zabs.zip": _zip_bytes({"/tmp/toy_unit.ipynb": nb}),
               "tsym.tar.gz": tar_bytes({"toy_unit.ipynb": nb}, symlinks={"data": "/etc"}),
               "thard.tar.gz": tar_bytes({"toy_unit.ipynb": nb}, hardlinks={"copy.ipynb": "toy_unit.ipynb"}),
               "tok.tgz": tar_bytes({"hw/toy_unit.ipynb": nb, "hw/notes.txt": b"hi"}),
               "broken.tar": b"not a tar"}
    for name, data in uploads.items():
        (tmp_path / name).write_bytes(data)
    found = find_submissions(tmp_path, "toy_unit")
    expected = {"zlink": "symbolic link", "zdots": "'..'", "zabs": "absolute path", "tsym": "symbolic link",
                "thard": "hard link", "broken": "not a readable tar"}
    for student, words in expected.items():
        assert found[student].status == "error" and words in found[student].message, found[student]
    assert found["tok"].status == "ok" and found["tok"].shipped == ["hw/notes.txt"]


def test_hard_links_and_identical_notebooks_are_flagged_not_refused(tmp_path, master):
    nb = release_notebook(master, solved=True)
    write_nb(tmp_path / "ann.ipynb", nb)
    os.link(tmp_path / "ann.ipynb", tmp_path / "bob.ipynb")
    write_nb(tmp_path / "cid.ipynb", {**nb, "metadata": {"x": 1}})
    write_nb(tmp_path / "dee.ipynb", {**nb, "metadata": {"x": 1}})
    write_nb(tmp_path / "eve.ipynb", {**nb, "metadata": {"x": 2}})
    found = find_submissions(tmp_path, "toy_unit")
    assert all(found[s].status == "ok" for s in found)
    assert any("2 hard links" in f for f in found["ann"].flags) and any("hard links" in f for f in found["bob"].flags)
    assert any("byte-identical to the one of dee" in f for f in found["cid"].flags)
    assert any("byte-identical to the one of cid" in f for f in found["dee"].flags)
    assert found["eve"].flags == []
