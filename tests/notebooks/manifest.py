"""A unit's manifest, `solutions/<U>/unit.toml`: what the notebook tests need to know about the unit.

    device = "cpu"                 # "cpu", or "gpu-optional" (runs on the CPU, uses a GPU when one is present)
    budget_s = 90                  # the unit's share of `make test` on 2 cores: its notebook tests together
    notebook_s = 60                # the solution notebook, top to bottom, on an idle 2-core machine
    tools = ["mlir-opt"]           # optional tools the notebook uses (named in messages when they are missing)
    nbgrader_wrong = ["ex__slug"]  # the wrong answer of its exercise that `make test` also sends through nbgrader
                                   # (default: the first stored one of each exercise but the last)
    full_grading = false           # true: every stored wrong answer through nbgrader as well as the fast path

Every key is optional; a unit without the file gets the defaults below.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

DEVICES = ("cpu", "gpu-optional")
_KEYS = {"device", "budget_s", "notebook_s", "tools", "nbgrader_wrong", "full_grading", "in_kernel"}


@dataclass(frozen=True)
class Manifest:
    """A unit's manifest (see the module docstring)."""

    device: str = "cpu"
    budget_s: float = 90.0
    notebook_s: float = 60.0
    tools: tuple[str, ...] = ()
    nbgrader_wrong: tuple[str, ...] = ()
    full_grading: bool = False
    in_kernel: tuple[str, ...] = ()   # exercises whose tests `make grade` still runs in the kernel (autograder.judge)
    path: Path | None = field(default=None, compare=False)


def load_manifest(unit_dir: Path) -> Manifest:
    """Read `<unit_dir>/unit.toml` (defaults when absent); a bad key or value is an error naming the file."""
    path = Path(unit_dir) / "unit.toml"
    if not path.is_file():
        return Manifest()
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"{path}: not valid TOML ({err})") from None
    unknown = set(data) - _KEYS
    if unknown:
        raise ValueError(f"{path}: unknown keys {sorted(unknown)}; a unit manifest may set {sorted(_KEYS)}")
    if data.get("device", "cpu") not in DEVICES:
        raise ValueError(f"{path}: device must be one of {DEVICES}, got {data['device']!r}")
    for key in ("budget_s", "notebook_s"):
        if key in data and not (isinstance(data[key], (int, float)) and data[key] > 0):
            raise ValueError(f"{path}: {key} must be a positive number of seconds, got {data[key]!r}")
    for key in ("tools", "nbgrader_wrong"):
        if key in data and not (isinstance(data[key], list) and all(isinstance(v, str) for v in data[key])):
            raise ValueError(f"{path}: {key} must be a list of strings, got {data[key]!r}")
    if "full_grading" in data and not isinstance(data["full_grading"], bool):
        raise ValueError(f"{path}: full_grading must be true or false, got {data['full_grading']!r}")
    entries = data.get("in_kernel", [])
    if not (isinstance(entries, list) and all(isinstance(e, dict) and set(e) == {"exercise", "why"} and all(
            isinstance(v, str) and v.strip() for v in e.values()) for e in entries)):
        raise ValueError(f"{path}: in_kernel must be [[in_kernel]] tables, each with an exercise and a why")
    return Manifest(in_kernel=tuple(e["exercise"] for e in entries), device=data.get("device", "cpu"), budget_s=float(data.get("budget_s", 90.0)),
                    notebook_s=float(data.get("notebook_s", 60.0)), tools=tuple(data.get("tools", ())),
                    nbgrader_wrong=tuple(data.get("nbgrader_wrong", ())),
                    full_grading=bool(data.get("full_grading", False)), path=path)
