"""The verdict protocol's pieces: sealing, signed records, the verdict channel and the test wrapper (autograder/)."""
import json
import os
import secrets
import sys

import pytest

from autograder.kernel_boot import AUDIT, DETAIL, END_LINE, ERR_LINE, EXC_INFO, OK_LINE, startup_file
from autograder.persistence import startup_files
from autograder.sealed import check_line, seal, sign_line, subkeys, unseal
from autograder.verdicts import Channel, Sealer, imported_names, names_read, trusted_before, wrap_test

pytestmark = pytest.mark.xdist_group("grader")
KEY = bytes(range(32))


def test_seal_round_trip_and_every_alteration_is_refused():
    payload = b"a hidden test" * 50
    blob = seal(KEY, secrets.token_bytes(16), payload)
    assert unseal(KEY, blob) == payload
    assert b"hidden" not in blob.encode() and "hidden" not in blob
    assert unseal(bytes(32), blob) is None, "another key must not open it"
    for at in (0, len(blob) // 2, len(blob) - 2):
        altered = blob[:at] + ("A" if blob[at] != "A" else "B") + blob[at + 1:]
        assert unseal(KEY, altered) is None, f"a blob altered at {at} was accepted"
    assert unseal(KEY, "not base64 !!") is None and unseal(KEY, 42) is None
    assert len(seal(KEY, secrets.token_bytes(16), b"x")) == len(seal(KEY, secrets.token_bytes(16), b"y" * 900))


def test_signed_lines_and_what_came_before_them():
    _, mac = subkeys(KEY)
    line = sign_line(mac, '{"r":1}')
    assert check_line(mac, line) == ('{"r":1}', True)
    assert check_line(mac, "junk" + line) == ('{"r":1}', False)
    assert check_line(mac, line.replace('"r":1', '"r":2'))[0] is None
    assert check_line(subkeys(bytes(32))[1], line)[0] is None


def test_channel_keeps_signed_records_and_reports_the_rest(tmp_path):
    fifo = tmp_path / "verdicts"
    os.mkfifo(fifo)
    channel = Channel(fifo, KEY)
    writer = os.open(fifo, os.O_WRONLY)
    _, mac = subkeys(KEY)
    os.write(writer, sign_line(mac, json.dumps({"r": 1, "k": "verdict", "seq": 3, "status": "ok"})).encode())
    os.write(writer, b"forged verdict\n")
    os.write(writer, sign_line(mac, json.dumps({"r": 1, "k": "verdict", "seq": 4})).encode())  # replayed r
    os.write(writer, b"junk" + sign_line(mac, json.dumps({"r": 2, "k": "end", "seq": 3})).encode())
    new = channel.poll()
    assert [r["k"] for r in new] == ["verdict", "end"] and channel.find("verdict", 3)["status"] == "ok"
    assert channel.find("verdict", 4) is None
    joined = " ".join(channel.problems)
    assert "did not sign" in joined and "repeated" in joined and "unsigned data" in joined
    os.close(writer)
    channel.close()


def _run_wrapped(source):
    """Run a wrapped test here, with recording stand-ins for the functions the kernel's signer binds."""
    seen = []

    def audit(event, nonce, what):
        seen.append((what, sys._getframe(1).f_lineno))

    code = wrap_test(source, "<t>", "n1")
    consts = {AUDIT: audit, EXC_INFO: sys.exc_info, DETAIL: lambda exc, nonce: seen.append(("detail", exc[0]))}
    code = code.replace(co_consts=tuple(consts.get(c, c) if isinstance(c, str) else c for c in code.co_consts))
    exec(code, {"__builtins__": __builtins__})
    return seen


def test_wrapper_reports_on_its_own_lines():
    assert _run_wrapped("x = 1\nassert x == 1") == [("ok", OK_LINE), ("end", END_LINE)]
    failed = _run_wrapped("x = 1\nassert x == 2, 'no'")
    assert failed[0] == ("err", ERR_LINE) and failed[1] == ("detail", AssertionError) and failed[2] == ("end", END_LINE)
    assert _run_wrapped("raise SystemExit")[0] == ("err", ERR_LINE), "SystemExit is a failure, not a silent end"
    assert "get_ipython" in wrap_test("%time x = 1", "<t>", "n").co_names, "IPython syntax is transformed here"
    with pytest.raises(SyntaxError):
        wrap_test("def broken(:", "<t>", "n")


def test_probes_are_the_size_of_the_test_they_precede():
    sealer = Sealer(KEY)
    test = sealer.test("check_equal(f(1), 2)\n" * 40, 3, "f_test", [])
    size = sealer.size(test)
    blobs = [sealer.trigger(p, size)[1] for p in sealer.probes(3, "f_test")] + [sealer.trigger(test)[1]]
    assert len({len(b) for b in blobs}) == 1, [len(b) for b in blobs]
    assert [sealer.trigger(sealer.hello([]))[0]] == [4], "sequence numbers count every trigger"


def test_trusted_names_are_the_checker_imports_of_the_instructors_cells_that_the_test_reads():
    assert imported_names("import numpy as np\nfrom infopt.grading import check_array as ca\nimport a.b") == (
        ("np", "numpy", ""), ("ca", "infopt.grading", "check_array"), ("a", "a", ""))
    reads = "import math\ncheck_equal(math.floor(np.pi), 3)\ndef f():\n    return check_array\n"
    cells = [{"kind": "code", "author": "instructor",
              "source": "import numpy as np\nfrom infopt.grading import check_equal, check_close"},
             {"kind": "solution", "author": "student", "source": "from infopt.grading import check_array"},
             {"kind": "test", "author": "instructor", "source": reads},
             {"kind": "code", "author": "instructor", "source": "import torch as np"},
             {"kind": "test", "author": "instructor", "source": reads}]
    assert sorted(trusted_before(cells, 2)) == [("check_equal", "infopt.grading", "check_equal"), ("math", "math", ""),
                                                ("np", "numpy", "")], "check_close is never read by the test"
    assert sorted(trusted_before(cells, 4)) == [("check_equal", "infopt.grading", "check_equal"),
                                                ("math", "math", "")], "a later non-checker binding replaces np"
    assert names_read("%time x\ny + z") >= {"get_ipython", "y", "z"} and names_read("def (") == frozenset()


def test_startup_files(tmp_path):
    for path in ("/home/s/.ipython/profile_default/startup/00.py", ".ipython/profile_x/ipython_config.py",
                 "/x/usercustomize.py", "/home/s/.local/lib/python3.11/site-packages/x.py", "/a/b.pth",
                 "/home/s/.jupyter/jupyter_config.py", ".config/ipython/profile_default/startup/a.ipy",
                 "/tmp/.ipython/extensions/ext.py"):
        assert startup_file(path), path
    for path in ("/home/s/work.py", "/tmp/.jupyter-runtime/kernel.json", "/home/s/ipython_notes.txt",
                 ".ipython/profile_default/startup/README", ".ipython/profile_default/history.sqlite", ".ipython"):
        assert not startup_file(path), path
    planted = tmp_path / ".ipython" / "profile_default" / "startup"
    planted.mkdir(parents=True)
    (planted / "README").write_text("IPython's own")
    (planted / "00-x.py").write_text("x = 1")
    (tmp_path / "notes.py").write_text("")
    assert startup_files(tmp_path) == [".ipython/profile_default/startup/00-x.py"]
