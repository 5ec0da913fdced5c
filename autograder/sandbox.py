"""The sandbox one submission's kernel runs in: bubblewrap namespaces, a separate uid, cgroup and rlimit caps.

Mechanisms, strongest first, each used when this machine has it (`probe()` says which):
- bubblewrap (Debian's `bwrap`): new mount/pid/net/ipc/uts namespaces; the kernel sees only the Python install,
  the venv, the `infopt` package (all read-only), its own writable folder and a fresh /tmp; no network; every
  process dies with the sandbox (`--die-with-parent` + pid namespace).
- a separate unprivileged uid per sandbox (`setpriv`, when the grader runs as root), leased with a lock file so no
  two live sandboxes on the machine share it (autograder/uids.py): RLIMIT_NPROC counts only that submission's
  processes and the kernel cannot read files owned by the grader.
- cgroups (v1 or v2, when writable): a memory cap (RSS, OOM kill reported) and a process cap; every process
  left in the group is killed at the end.
- rlimits via `prlimit`: file size, CPU seconds, open files, processes; address space when there is no memory cgroup.
Without bubblewrap the kernel still runs under rlimits, and `probe()` says the isolation is weaker.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from .uids import UidLease, lease_uid

_CGROOT = Path("/sys/fs/cgroup")
_SYSTEM_DIRS = ("/usr", "/etc")
_SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


@dataclasses.dataclass(frozen=True)
class Limits:
    """Caps for one notebook: memory (MB), processes, file size (MB), CPU s, wall s (notebook), wall s per cell."""

    memory_mb: int = 2048
    pids: int = 256
    file_mb: int = 128
    cpu_s: int = 900
    wall_s: float = 600.0
    cell_s: float = 180.0
    open_files: int = 512
    startup_s: float = 60.0

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"Limits.{field.name} must be a positive number, got {value!r}")


def _run_ok(argv: list[str]) -> bool:
    try:
        return subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


_PROBE: dict[str, str] | None = None


def probe() -> dict[str, str]:
    """Which isolation mechanisms work here: {'bwrap'|'uid'|'cgroup_memory'|'cgroup_pids'|'prlimit': 'yes'|why not}."""
    global _PROBE
    if _PROBE is not None:
        return dict(_PROBE)
    found: dict[str, str] = {}
    bwrap, setpriv, prlimit = shutil.which("bwrap"), shutil.which("setpriv"), shutil.which("prlimit")
    root = os.geteuid() == 0
    if not bwrap:
        found["bwrap"] = "not installed (apt-get install bubblewrap)"
    elif _run_ok([bwrap, "--ro-bind", "/", "/", "--unshare-pid", "--unshare-net", "--die-with-parent"]
                 + ([] if root else ["--unshare-user"]) + ["--proc", "/proc", "--dev", "/dev", "/bin/true"]):
        found["bwrap"] = "yes"
    else:
        found["bwrap"] = "installed but cannot create namespaces here (user namespaces disabled?)"
    if not root:
        found["uid"] = "grader is not root: kernel runs as the grader's uid"
    elif not setpriv:
        found["uid"] = "setpriv missing (util-linux)"
    else:
        found["uid"] = "yes"
    found["prlimit"] = "yes" if prlimit else "prlimit missing (util-linux): no rlimits"
    for controller in ("memory", "pids"):
        found[f"cgroup_{controller}"] = "yes" if _cgroup_base(controller) else "no writable cgroup " + controller
    _PROBE = found
    return dict(found)


def _cgroup_base(controller: str) -> Path | None:
    """The folder under which this grader can create cgroups for `controller` (v1 or v2), or None."""
    if os.geteuid() != 0:
        return None
    v1 = _CGROOT / controller
    candidates = [v1] if (v1 / "cgroup.procs").exists() else []
    if (_CGROOT / "cgroup.controllers").exists():
        if controller in (_CGROOT / "cgroup.controllers").read_text().split():
            candidates.append(_CGROOT)
    for base in candidates:
        test = base / f"infopt-probe-{os.getpid()}"
        try:
            test.mkdir()
            knob = test / ("memory.limit_in_bytes" if controller == "memory" and base == v1 else
                           "memory.max" if controller == "memory" else "pids.max")
            ok = knob.exists()
            test.rmdir()
            if ok:
                return base
        except OSError:
            continue
    return None


class Sandbox:
    """One submission's sandbox: a writable work folder, a run folder for the kernel's sockets, caps, and cleanup."""

    def __init__(self, limits: Limits, uid: int | None = None, scratch: Path | None = None,
                 require_isolation: bool = False) -> None:
        """Make the folders and cgroups; `uid` None (the normal case) leases a uid no other live sandbox has."""
        self.limits = limits
        self.mechanisms = probe()
        if require_isolation and self.mechanisms["bwrap"] != "yes":
            raise RuntimeError(f"bubblewrap isolation unavailable: {self.mechanisms['bwrap']}")
        self.root = Path(os.path.realpath(scratch or "/tmp")) / f"infopt-grade-{uuid.uuid4().hex[:12]}"
        self.work = self.root / "work"
        self.run_dir = self.root / "run"
        self.work.mkdir(parents=True)
        self.run_dir.mkdir()
        self.lease: UidLease | None = None
        if self.mechanisms["uid"] != "yes":
            self.uid = None
        elif uid is not None:
            self.uid = uid
        else:
            self.lease = lease_uid()
            self.uid = self.lease.uid
        self.root.chmod(0o755)
        for path in (self.work, self.run_dir):
            path.chmod(0o700)
            if self.uid is not None:
                os.chown(path, self.uid, self.uid)
        self.cgroups: list[Path] = []
        self.memory_cgroup: Path | None = None
        self._make_cgroups()
        self.home = "/home/student" if self.mechanisms["bwrap"] == "yes" else str(self.work)

    # --- cgroups ------------------------------------------------------------------------------------------
    def _make_cgroups(self) -> None:
        name = self.root.name
        for controller in ("memory", "pids"):
            if self.mechanisms[f"cgroup_{controller}"] != "yes":
                continue
            base = _cgroup_base(controller)
            if base is None:
                continue
            group = base / "infopt-grader" / name
            try:
                group.mkdir(parents=True, exist_ok=True)
                if controller == "memory":
                    limit = str(self.limits.memory_mb * 1024 * 1024)
                    v1 = base != _CGROOT
                    (group / ("memory.limit_in_bytes" if v1 else "memory.max")).write_text(limit)
                    if v1 and (group / "memory.memsw.limit_in_bytes").exists():
                        try:
                            (group / "memory.memsw.limit_in_bytes").write_text(limit)
                        except OSError:
                            pass
                    if not v1 and (group / "memory.swap.max").exists():
                        (group / "memory.swap.max").write_text("0")
                    self.memory_cgroup = group
                else:
                    (group / "pids.max").write_text(str(self.limits.pids))
            except OSError:
                continue
            if group not in self.cgroups:
                self.cgroups.append(group)

    def out_of_memory(self) -> bool:
        """True when the memory cgroup hit its cap (the OOM killer ran or an allocation failed)."""
        group = self.memory_cgroup
        if group is None:
            return False
        try:
            if (group / "memory.oom_control").exists():
                text = (group / "memory.oom_control").read_text()
                kills = [int(line.split()[1]) for line in text.splitlines() if line.startswith("oom_kill ")]
                return bool(kills and kills[0] > 0) or int((group / "memory.failcnt").read_text()) > 0
            events = (group / "memory.events").read_text().split()
            return int(events[events.index("oom_kill") + 1]) > 0
        except (OSError, ValueError, IndexError):
            return False

    def memory_cap_hits(self) -> int:
        """How many times the memory cgroup's use has reached its cap (cgroup v2 `memory.events` max, v1 failcnt);
        0 without a memory cgroup. A cell during which this grows and that then runs out of time was thrashing at
        the cap, not computing."""
        group = self.memory_cgroup
        if group is None:
            return 0
        try:
            if (group / "memory.failcnt").exists():
                return int((group / "memory.failcnt").read_text())
            events = (group / "memory.events").read_text().split()
            return int(events[events.index("max") + 1])
        except (OSError, ValueError, IndexError):
            return 0

    def peak_memory_mb(self) -> float | None:
        """The highest memory use of the sandbox so far (MB), when a memory cgroup measures it."""
        group = self.memory_cgroup
        for knob in ("memory.max_usage_in_bytes", "memory.peak"):
            if group is not None and (group / knob).exists():
                try:
                    return round(int((group / knob).read_text().split()[0]) / 2**20, 1)
                except (OSError, ValueError, IndexError):
                    return None
        return None

    def kill_all(self) -> None:
        """SIGKILL every process still in this sandbox's cgroups (the pid namespace already took the rest)."""
        for _ in range(50):
            pids: set[int] = set()
            for group in self.cgroups:
                try:
                    pids.update(int(p) for p in (group / "cgroup.procs").read_text().split())
                except OSError:
                    pass
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)

    def cleanup(self) -> None:
        """Kill what is left, remove the cgroups and the sandbox's folders, give the uid back."""
        self.kill_all()
        for group in self.cgroups:
            for _ in range(40):
                try:
                    group.rmdir()
                    break
                except OSError:
                    time.sleep(0.05)
        shutil.rmtree(self.root, ignore_errors=True)
        if self.lease is not None:
            self.lease.release()
            self.lease = None

    # --- the command line ---------------------------------------------------------------------------------
    def env(self) -> dict[str, str]:
        """The kernel's whole environment: nothing of the grader's (no tokens, no paths to the course)."""
        tmp = "/tmp" if self.mechanisms["bwrap"] == "yes" else str(self.work)
        return {
            "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
            "HOME": self.home, "TMPDIR": tmp, "IPYTHONDIR": f"{tmp}/.ipython", "MPLCONFIGDIR": f"{tmp}/.mpl",
            "JUPYTER_RUNTIME_DIR": f"{tmp}/.jupyter-runtime", "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONPATH": str(Path(_infopt_dir()).parent), "LANG": "C.UTF-8", "MPLBACKEND": "Agg",
            "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "TORCH_NUM_THREADS": "1", "INFOPT_GRADING": "1",
        }

    def wrap(self, argv: list[str]) -> list[str]:
        """The full command that runs `argv` inside this sandbox (cgroup attach, prlimit, bwrap, setpriv)."""
        cmd: list[str] = []
        if self.cgroups:
            attach = " ".join(f"'{g / 'cgroup.procs'}'" for g in self.cgroups)
            cmd += ["/bin/sh", "-c", f'for p in {attach}; do echo $$ > "$p" || exit 97; done; exec "$@"',
                    "infopt-sandbox"]
        if self.mechanisms["prlimit"] == "yes":
            mb = 1024 * 1024
            cmd += [shutil.which("prlimit") or "prlimit", f"--fsize={self.limits.file_mb * mb}",
                    f"--cpu={self.limits.cpu_s}", f"--nofile={self.limits.open_files}", "--core=0"]
            if self.uid is not None:
                cmd.append(f"--nproc={self.limits.pids}")
            if self.memory_cgroup is None:  # no RSS cap: the address space is the next best (and looser) cap
                cmd.append(f"--as={max(4 * self.limits.memory_mb, 4096) * mb}")
        if self.mechanisms["bwrap"] == "yes":
            cmd += self._bwrap_args()
        if self.uid is not None:
            cmd += [shutil.which("setpriv") or "setpriv", f"--reuid={self.uid}", f"--regid={self.uid}",
                    "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
        return cmd + argv

    def _bwrap_args(self) -> list[str]:
        args = [shutil.which("bwrap") or "bwrap", "--die-with-parent", "--new-session", "--unshare-pid",
                "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox"]
        if os.geteuid() != 0:
            args.append("--unshare-user")
        made: set[str] = set()

        def ensure_parents(dest: str) -> None:
            parents = list(Path(dest).parents)[::-1][1:]  # skip '/'
            for parent in parents:
                if str(parent) not in made:
                    args.extend(["--perms", "0755", "--dir", str(parent)])
                    made.add(str(parent))

        for path in _SYSTEM_DIRS:
            if os.path.isdir(path):
                args += ["--ro-bind", path, path]
                made.add(path)
        for path in _SYSTEM_LINKS:
            if os.path.islink(path):
                args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                args += ["--ro-bind", path, path]
                made.add(path)
        # ipykernel exits when its parent pid vanishes; inside the pid namespace that pid never exists.
        args += ["--unsetenv", "JPY_PARENT_PID", "--proc", "/proc", "--dev", "/dev", "--perms", "1777",
                 "--tmpfs", "/tmp"]
        made.add("/tmp")
        covered = [p for p in _SYSTEM_DIRS if os.path.isdir(p)]
        covered += [p for p in _SYSTEM_LINKS if os.path.isdir(p) and not os.path.islink(p)]
        binds = sorted({os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix), sys.prefix,
                        _infopt_dir()}, key=len)
        for path in binds:
            if any(path == c or path.startswith(c.rstrip("/") + "/") for c in covered):
                continue
            ensure_parents(path)
            args += ["--ro-bind", path, path]
            covered.append(path)
        ensure_parents(self.home)
        args += ["--bind", str(self.work), self.home]
        ensure_parents(str(self.run_dir))
        args += ["--bind", str(self.run_dir), str(self.run_dir), "--chdir", self.home]
        return args

    def prepare_run_files(self) -> None:
        """Let the sandbox's uid read the kernel's connection file (jupyter_client writes it 0600 as root)."""
        if self.uid is None:
            return
        for path in self.run_dir.iterdir():
            os.chown(path, self.uid, self.uid)


def _infopt_dir() -> str:
    """The installed `infopt` package folder (bound read-only into the sandbox; nothing else of the repo is)."""
    import infopt

    return os.path.realpath(os.path.dirname(infopt.__file__))
