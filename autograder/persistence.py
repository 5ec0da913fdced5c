"""Files a kernel would read at its next start, left in a sandbox's home: attempts to persist, flagged even when
harmless (each kernel gets a fresh home, so nothing planted there reaches another student today).

The kernel's audit hook reports such writes as they happen (kernel_boot.py); this scan of the home after the run
also catches writes made by child processes, which the hook does not see.
"""
from __future__ import annotations

import os
from pathlib import Path

from .kernel_boot import startup_file


def startup_files(home: Path, limit: int = 20) -> list[str]:
    """Paths (relative to `home`) of files a Python/IPython/Jupyter start-up would pick up, at most `limit`."""
    home = Path(home)
    found: list[str] = []
    for folder, dirs, files in os.walk(home, followlinks=False):
        rel = Path(folder).relative_to(home)
        for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            if startup_file(str(rel / name)):
                found.append(str(rel / name))
                if len(found) >= limit:
                    return found
    return found
