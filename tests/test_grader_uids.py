"""Sandbox identities: a uid no two live sandboxes share, across grader processes, and two graders run at once."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.assemble import release_notebook
from autograder.grade import load_unit
from autograder.sandbox import probe
from autograder.uids import lease_uid

pytestmark = pytest.mark.xdist_group("grader")
REPO = Path(__file__).resolve().parent.parent
TOY = Path(__file__).parent / "grader_fixtures" / "toy_unit" / "toy_unit.py"


def test_leases_are_exclusive_and_given_back():
    first = lease_uid(start=0)
    second = lease_uid(start=0)
    assert first.uid != second.uid
    first.release()
    again = lease_uid(start=0)
    assert again.uid == first.uid, "a released uid can be leased again"
    again.release()
    second.release()
    with pytest.raises(ValueError, match=">= 1000"):
        lease_uid(base=0)


def test_a_lease_held_by_another_process_is_never_handed_out(tmp_path):
    code = ("import sys, time; sys.path.insert(0, %r)\nfrom autograder.uids import lease_uid\n"
            "l = lease_uid(start=5)\nprint(l.uid, flush=True)\ntime.sleep(30)" % str(REPO))
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        held = int(holder.stdout.readline())
        mine = lease_uid(start=5)
        assert mine.uid != held
        mine.release()
    finally:
        holder.kill()
        holder.wait()
    after = lease_uid(start=5)
    assert after.uid == held, "the lock went away with the process that held it"
    after.release()


STUDENT_CODE = '''
import os, time
print("IDENTITY", json.dumps({"uid": os.getuid(), "start": time.time()}))
time.sleep(8)
print("IDENTITY-END", json.dumps({"end": time.time()}))
'''


@pytest.mark.skipif(probe()["uid"] != "yes", reason=f"separate uids: {probe()['uid']}")
def test_two_graders_at_once_run_their_sandboxes_under_different_uids(tmp_path):
    unit = load_unit("toy_unit", TOY)
    nb = release_notebook(unit.master, solved=True)
    first_code = next(c for c in nb["cells"] if c["cell_type"] == "code" and "import numpy" in c["source"])
    first_code["source"] += "\nimport json\n" + STUDENT_CODE
    runs = []
    for name in ("one", "two"):
        folder = tmp_path / name / "uploads"
        folder.mkdir(parents=True)
        (folder / f"{name}.ipynb").write_text(json.dumps({**nb, "metadata": {"student": name}}))
        runs.append(subprocess.Popen(
            [sys.executable, "-m", "autograder.grade", "--unit", "toy_unit", "--submissions", str(folder),
             "--source", str(TOY), "--out", str(tmp_path / name / "out"), "--workers", "1", "--quiet"],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outputs = [run.communicate(timeout=240)[0] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    seen = {}
    for name in ("one", "two"):
        lines = (tmp_path / name / "out" / "logs" / f"{name}.jsonl").read_text().splitlines()
        output = next(r["output"] for r in map(json.loads, lines) if "IDENTITY" in r["output"])
        found = dict(line.split(" ", 1) for line in output.splitlines() if line.startswith("IDENTITY"))
        seen[name] = {**json.loads(found["IDENTITY"]), **json.loads(found["IDENTITY-END"])}
    one, two = seen["one"], seen["two"]
    assert one["start"] < two["end"] and two["start"] < one["end"], f"the two sandboxes did not overlap: {seen}"
    assert one["uid"] != two["uid"], f"two live sandboxes shared uid {one['uid']}"
    assert all(s["uid"] >= 200000 for s in seen.values())
