"""Files a kernel would read at its next start, left in a sandbox's home: attempts to persist, flagged even when
harmless (each kernel gets a fresh home, so nothing planted there reaches another student today).

The kernel's audit hook reports such writes as they happen (kernel_boot.py); this scan of the home after the run
also catches writes made by child processes, which the hook does not see.
"""
from __future__ import annotations

import os
from pathlib import Path

_NAMES = ("usercustomize.py", "sitecustomize.py", "ipython_config.py", "ipython_kernel_config.py",
          "jupyter_config.py", "jupyter_config.json", "ipython_config.json")


def _is_startup(parts: tuple[str, ...], name: str) -> bool:
    """True for a file `name` in folder `parts` (relative to the home) that a kernel start would read."""
    if name in _NAMES or name.endswith(".pth"):
        return True
    if len(parts) >= 2 and parts[-1] == "startup" and parts[-2].startswith("profile_"):
        return not name.startswith("README")  # IPython writes startup/README itself
    if ".ipython" in parts and {"extensions", "nbextensions"} & set(parts):
        return True
    if len(parts) >= 3 and parts[:2] == (".local", "lib") and parts[2].startswith("python"):
        return True
    return parts[:2] == (".config", "ipython") or ".jupyter" in parts


def startup_files(home: Path, limit: int = 20) -> list[str]:
    """Paths (relative to `home`) of files a Python/IPython/Jupyter start-up would pick up, at most `limit`."""
    home = Path(home)
    found: list[str] = []
    for folder, dirs, files in os.walk(home, followlinks=False):
        parts = Path(folder).relative_to(home).parts
        for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            if _is_startup(parts, name):
                found.append(str(Path(*parts, name)))
                if len(found) >= limit:
                    return found
    return found
