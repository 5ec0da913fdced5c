"""Sandbox uids that no two live sandboxes share, across every grader process on this machine.

Each sandbox leases a uid for its whole life: a lock file per uid (`uid-<n>.lock` in a shared folder), held with
an exclusive `fcntl.flock` while the sandbox lives. The kernel releases the lock when the holder exits, however
it exits, so a crashed grader never leaks a uid. A uid that some live process still runs as (left over from a
grader killed mid-run) is skipped, so limits counted per uid (RLIMIT_NPROC) never mix two students.
"""
from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path

UID_BASE = 200000
UID_COUNT = 20000
_DIRS = (Path("/run/infopt-grader"), Path(tempfile.gettempdir()) / "infopt-grader-uids")


class UidLease:
    """One leased uid; `release()` (or the holder's exit) gives it back."""

    def __init__(self, uid: int, fd: int, path: Path) -> None:
        self.uid, self._fd, self.path = uid, fd, path

    def release(self) -> None:
        """Give the uid back (idempotent)."""
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "UidLease":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def lock_dir() -> Path:
    """The shared folder of uid lock files (/run/infopt-grader when writable, else one under the temp folder)."""
    for folder in _DIRS:
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
            if os.access(folder, os.W_OK):
                return folder
        except OSError:
            continue
    raise RuntimeError(f"no writable folder for sandbox uid locks (tried {', '.join(map(str, _DIRS))})")


def _uids_in_use() -> set[int]:
    """The real uids of every live process (a uid still in use must not be handed out again)."""
    found: set[int] = set()
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                found.add(os.stat(f"/proc/{pid}").st_uid)
            except OSError:
                continue
    return found


def lease_uid(base: int = UID_BASE, count: int = UID_COUNT, start: int | None = None) -> UidLease:
    """Lease the first free uid in [base, base + count), trying from `start` (default: spread by pid).

    Raises RuntimeError when every uid in the range is leased or in use (raise `count` or wait)."""
    if base < 1000 or count < 1:
        raise ValueError(f"sandbox uids must be >= 1000 and the range non-empty, got base={base} count={count}")
    folder = lock_dir()
    busy = _uids_in_use()
    first = (start if start is not None else os.getpid() * 7) % count
    for step in range(count):
        uid = base + (first + step) % count
        if uid in busy:
            continue
        path = folder / f"uid-{uid}.lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return UidLease(uid, fd, path)
    raise RuntimeError(f"all {count} sandbox uids from {base} are in use; pass a larger range or grade fewer at once")
