"""Start JupyterLab from the project's environment on 127.0.0.1 with a random port and token, and stop it cleanly.

The server runs with fresh settings/workspace folders (news and update checks off, notebook windowing off) so
no toast covers the page, and every process it started (kernels, and what kernels start) is tracked so the test
can prove that nothing outlives it.
"""
from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil

SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none", "autoStartDefaultKernel": True},
    "@jupyterlab/apputils-extension/themes.jupyterlab-settings": {"theme": "JupyterLab Light"},
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]



def _die_with_parent() -> None:
    """In the child before exec: ask Linux to SIGTERM it when the test process dies, even by SIGKILL or a CI
    timeout that skips pytest's cleanup (JupyterLab then shuts its kernels down itself)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: the test's own cleanup still runs in the normal case

class LabServer:
    """A JupyterLab server on ``root``; use as a context manager. ``url_for(path)`` gives an authenticated URL."""

    def __init__(self, root: Path, workdir: Path) -> None:
        self.root = Path(root)
        self.workdir = Path(workdir)
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.proc: subprocess.Popen | None = None
        self.seen_pids: set[int] = set()
        self._kernel_seen: tuple[str | None, float] = (None, 0.0)  # one_steady_kernel's last answer and since when
        self.log_path = self.workdir / "jupyterlab.log"

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url_for(self, path: str = "") -> str:
        """JupyterLab's page (on `path`, when given), authenticated, with a fresh workspace."""
        return f"{self.base}/lab{'/tree/' + path if path else ''}?token={self.token}&reset"

    def __enter__(self) -> "LabServer":
        settings = self.workdir / "user-settings"
        for rel, value in SETTINGS.items():
            plugin_dir, fname = rel.rsplit("/", 1)
            (settings / plugin_dir).mkdir(parents=True, exist_ok=True)
            (settings / plugin_dir / fname).write_text(json.dumps(value))
        (self.workdir / "workspaces").mkdir(exist_ok=True)
        env = dict(os.environ)
        env["JUPYTER_CONFIG_DIR"] = str(self.workdir / "jupyter-config")
        env["JUPYTER_RUNTIME_DIR"] = str(self.workdir / "jupyter-runtime")
        env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
        cmd = [
            sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={self.port}",
            "--port-retries=0", f"--ServerApp.token={self.token}", f"--ServerApp.root_dir={self.root}",
            f"--LabApp.user_settings_dir={settings}", f"--LabApp.workspaces_dir={self.workdir / 'workspaces'}",
            "--LabApp.news_url=", "--ServerApp.allow_remote_access=False",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--ServerApp.allow_root=True")
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
                                     preexec_fn=_die_with_parent)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {self.proc.returncode}; log:\n{self.log_path.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{self.base}/api/status?token={self.token}", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        self.kill_leftovers()
        raise RuntimeError(f"JupyterLab did not answer within 90 s; log:\n{self.log_path.read_text()[-3000:]}")

    def track(self) -> set[int]:
        """Record the server's whole process tree (call it while kernels are alive); returns the pids seen."""
        if self.proc is not None:
            try:
                parent = psutil.Process(self.proc.pid)
                self.seen_pids |= {parent.pid} | {c.pid for c in parent.children(recursive=True)}
            except psutil.NoSuchProcess:
                pass
        return set(self.seen_pids)

    def stop(self) -> None:
        """Shut the server down through its API, as Ctrl-C would, and wait for its whole tree to exit.

        Nothing is killed here: the test checks ``leftovers()`` afterwards, and ``kill_leftovers()`` only cleans up.
        """
        if self.proc is None:
            return
        self.track()
        try:
            req = urllib.request.Request(f"{self.base}/api/shutdown?token={self.token}", method="POST")
            urllib.request.urlopen(req, timeout=10).close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        deadline = time.monotonic() + 15
        while self.leftovers() and time.monotonic() < deadline:
            time.sleep(0.3)
        self._log.close()

    def kill_leftovers(self) -> None:
        """Cleanup after a failure: kill whatever is left of the server's tree."""
        for pid in self.seen_pids:
            try:
                psutil.Process(pid).kill()
            except psutil.NoSuchProcess:
                pass
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()

    def kernels(self) -> list[dict]:
        """The server's running kernels (its REST API)."""
        with urllib.request.urlopen(f"{self.base}/api/kernels?token={self.token}", timeout=5) as r:
            return json.loads(r.read())

    def one_steady_kernel(self, steady_s: float = 2.0) -> bool:
        """Whether exactly one kernel runs and it has been the same one for ``steady_s`` (poll it in a loop).

        JupyterLab sometimes starts two kernels for a notebook it has just opened and shuts one down a moment
        later; a Run All chosen in between can lose its queued cells. Waiting for one steady kernel avoids that."""
        ids = sorted(k["id"] for k in self.kernels())
        now = ids[0] if len(ids) == 1 else None
        last, since = self._kernel_seen
        if now != last:
            self._kernel_seen = (now, time.monotonic())
            return False
        return now is not None and time.monotonic() - since >= steady_s

    def shutdown_kernels(self, timeout_s: float = 30.0) -> list[str]:
        """Shut every running kernel down through the server's API, as closing a notebook's session does, and wait
        until their processes (and whatever they started) are gone; returns those still alive (should be none)."""
        self.track()
        before = set(self.seen_pids)
        server = {self.proc.pid} if self.proc is not None else set()
        for kernel in self.kernels():
            req = urllib.request.Request(f"{self.base}/api/kernels/{kernel['id']}?token={self.token}", method="DELETE")
            try:
                urllib.request.urlopen(req, timeout=10).close()
            except OSError:
                pass
        deadline = time.monotonic() + timeout_s
        while True:
            alive = [p for p in self._alive(before - server)]
            if not alive or time.monotonic() > deadline:
                return alive
            time.sleep(0.2)

    def _alive(self, pids: set[int]) -> list[str]:
        alive = []
        for pid in pids:
            try:
                p = psutil.Process(pid)
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(f"{pid} {' '.join(p.cmdline())[:120]}")
            except psutil.NoSuchProcess:
                pass
        return alive

    def leftovers(self) -> list[str]:
        """Processes of the server's tree still alive (should be none after stop())."""
        return self._alive(self.seen_pids)

    def __exit__(self, *exc) -> None:
        self.stop()
        self.kill_leftovers()
