"""The MLIR 19 executables (Debian's `mlir-19-tools`, `clang-19`): found once, run with clear errors.

    run_tool("mlir-opt", ["--canonicalize"], text)      -> the tool's stdout (MlirToolError with its stderr)

Names are the plain tool names; the `-19` suffixed binaries Debian installs are preferred, then the plain ones if
they are version 19. A missing tool raises MlirToolError naming the apt package to install.
"""
from __future__ import annotations

import functools
import shutil
import subprocess
from pathlib import Path

VERSION = 19
PACKAGES = {"mlir-opt": "mlir-19-tools", "mlir-translate": "mlir-19-tools", "mlir-cpu-runner": "mlir-19-tools",
            "mlir-tblgen": "mlir-19-tools", "clang": "clang-19", "llc": "llvm-19"}
LLVM_ROOT = Path(f"/usr/lib/llvm-{VERSION}")


class MlirToolError(RuntimeError):
    """An MLIR tool is missing, or it rejected its input (the message holds the tool's own diagnostics)."""


@functools.lru_cache(maxsize=None)
def tool_path(name: str) -> str:
    """The path of MLIR/LLVM tool `name` (e.g. "mlir-opt"), version 19; MlirToolError naming the package if absent."""
    if name not in PACKAGES:
        raise MlirToolError(f"unknown tool {name!r}; known: {sorted(PACKAGES)}")
    for candidate in (f"{name}-{VERSION}", str(LLVM_ROOT / "bin" / name)):
        found = shutil.which(candidate)
        if found:
            return found
    raise MlirToolError(f"{name}-{VERSION} is not installed: `sudo apt-get install {PACKAGES[name]}` "
                        f"(or `make setup` as root, which installs the course's system packages)")


def run_tool(name: str, args: list[str], stdin: str | None = None, timeout_s: float = 120.0) -> str:
    """Run tool `name` with `args`, feeding `stdin`; its stdout, or MlirToolError carrying its diagnostics."""
    cmd = [tool_path(name), *args]
    try:
        proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise MlirToolError(f"{name} ran past {timeout_s:.0f} s: {' '.join(args)[:300]}") from None
    if proc.returncode != 0:
        raise MlirToolError(f"{name} {' '.join(args)[:300]} failed (exit {proc.returncode}):\n{proc.stderr.strip()[:4000]}")
    return proc.stdout


def mlir_opt(text: str, *passes: str) -> str:
    """`mlir-opt-19 <passes>` on MLIR text (each pass given as a full flag, e.g. "--canonicalize")."""
    return run_tool("mlir-opt", list(passes), text)


def tool_versions() -> dict[str, str]:
    """{tool: first line of its --version} for the MLIR tools (what the notebook prints)."""
    out = {}
    for name in ("mlir-opt", "mlir-translate", "mlir-tblgen", "clang"):
        text = run_tool(name, ["--version"])
        line = next((ln.strip() for ln in text.splitlines() if "version" in ln.lower()), text.strip()[:60])
        out[name] = line
    return out
