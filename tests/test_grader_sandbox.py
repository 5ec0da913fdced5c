"""autograder.sandbox: what a process inside sees and may do (repo hidden, no network, caps), and that cleanup kills all."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder.sandbox import Limits, Sandbox, probe

pytestmark = pytest.mark.xdist_group("grader")
REPO = Path(__file__).resolve().parent.parent
needs_bwrap = pytest.mark.skipif(probe()["bwrap"] != "yes", reason=f"bubblewrap: {probe()['bwrap']}")


def run_in(sandbox: Sandbox, code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(sandbox.wrap([sys.executable, "-c", code]), env=sandbox.env(), capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture
def sandbox():
    box = Sandbox(Limits(memory_mb=256, pids=32, file_mb=2, cpu_s=20))
    yield box
    box.cleanup()
    assert not box.root.exists()
    assert box.lease is None, "the uid went back to the pool"


def test_two_live_sandboxes_never_share_a_uid():
    first, second = Sandbox(Limits()), Sandbox(Limits())
    try:
        if first.uid is not None:
            assert first.uid != second.uid
            assert first.root != second.root and set(first.cgroups).isdisjoint(second.cgroups)
    finally:
        first.cleanup()
        second.cleanup()


def test_limits_reject_nonsense():
    with pytest.raises(ValueError, match="memory_mb"):
        Limits(memory_mb=0)


@needs_bwrap
def test_sees_only_python_venv_and_infopt(sandbox):
    code = ("import os, infopt, json; print(json.dumps({'repo': sorted(os.listdir(%r)), 'cwd': os.getcwd(), "
            "'uid': os.getuid(), 'infopt': infopt.__file__}))" % str(REPO))
    out = run_in(sandbox, code)
    assert out.returncode == 0, out.stderr
    import json
    seen = json.loads(out.stdout)
    assert "solutions" not in seen["repo"] and "course" not in seen["repo"] and "autograder" not in seen["repo"]
    assert seen["cwd"] == sandbox.home
    if sandbox.uid is not None:
        assert seen["uid"] == sandbox.uid
    for secret in ("solutions", "gradebook.db", "autograder"):
        out = run_in(sandbox, f"open({str(REPO / secret)!r}).read()")
        assert out.returncode != 0 and ("FileNotFoundError" in out.stderr or "IsADirectory" not in out.stderr)


@needs_bwrap
def test_no_network_and_read_only_system(sandbox):
    out = run_in(sandbox, "import socket\ntry:\n    socket.create_connection(('1.1.1.1', 53), timeout=2)\n"
                          "    print('CONNECTED')\nexcept OSError as e:\n    print('blocked', e)")
    assert "blocked" in out.stdout and "CONNECTED" not in out.stdout
    out = run_in(sandbox, "open('/usr/pwned', 'w')")
    assert out.returncode != 0 and not Path("/usr/pwned").exists()
    out = run_in(sandbox, "open('here.txt', 'w').write('ok'); print(open('here.txt').read())")
    assert out.stdout.strip() == "ok" and (sandbox.work / "here.txt").exists()


def test_file_size_cap(sandbox):
    if probe()["prlimit"] != "yes":
        pytest.skip("prlimit missing")
    out = run_in(sandbox, "f = open('big', 'wb')\nf.write(b'x' * (8 * 2**20))")
    assert out.returncode != 0
    assert (sandbox.work / "big").stat().st_size <= 2 * 2**20


def test_memory_cap_stops_a_growing_allocation(sandbox):
    out = run_in(sandbox, "x = []\nwhile True:\n    x.append(b'y' * 2**25)")
    assert out.returncode != 0
    if sandbox.memory_cgroup is not None:
        assert sandbox.out_of_memory()


def test_process_cap_and_everything_killed_at_cleanup():
    box = Sandbox(Limits(pids=24, cpu_s=20))
    marker = f"infopt-sandbox-probe-{os.getpid()}"
    code = ("import os, subprocess, sys\nn = 0\nfor _ in range(200):\n    try:\n"
            f"        subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60) # {marker}'], "
            "start_new_session=True)\n        n += 1\n    except OSError:\n        break\nprint(n)")
    try:
        out = subprocess.run(box.wrap([sys.executable, "-c", code]), env=box.env(), capture_output=True, text=True,
                             timeout=60)
        started = int(out.stdout.strip() or 0)
        if box.cgroups or box.uid is not None:
            assert started < 200, "the process cap did not stop the loop"
    finally:
        box.cleanup()
    time.sleep(0.3)
    alive = []
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and marker in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                alive.append(pid)
        except OSError:
            pass
    assert not alive, f"processes outlived the sandbox: {alive}"
