"""The leak property's two halves: the grader's own lines of a unit, and where any of them appear in a run's outputs.

A grader line is a stripped line (longer than 12 characters) of a hidden-test block or a solution block that the
release does not show. Outputs are read the way a person would read them: feedback and summary pages with HTML
entities decoded, every cell of grades.csv, every string inside results.jsonl and the per-student logs, and the
kernels' raw logs.
"""
from __future__ import annotations

import csv
import html
import json
from pathlib import Path

from autograder.scrub import secret_lines


def grader_lines(master: list, release: dict | None) -> set[str]:
    """Hidden-test and solution lines of a unit (the ones the release does not show)."""
    shown = {line.strip() for cell in (release or {}).get("cells", [])
             for line in "".join(cell.get("source", "")).splitlines()}
    lines = secret_lines(c.source for c in master if c.kind in ("solution", "test", "manual"))
    return {line for line in lines if len(line) > 12 and line not in shown}


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def output_texts(out: Path) -> dict[str, str]:
    """{file: the text a reader sees} for every output of a grading run in `out`."""
    out = Path(out)
    texts: dict[str, str] = {}
    for page in sorted(out.glob("feedback/*.html")) + [out / "summary.html"]:
        texts[str(page)] = html.unescape(page.read_text(encoding="utf-8"))
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        texts[str(out / "grades.csv")] = "\n".join(cell for row in csv.reader(handle) for cell in row)
    for path in [out / "results.jsonl"] + sorted(out.glob("logs/*.jsonl")):
        lines = path.read_text(encoding="utf-8").splitlines()
        texts[str(path)] = "\n".join(s for line in lines if line.strip() for s in _strings(json.loads(line)))
    for path in sorted(out.glob("logs/*.kernel.log")):
        texts[str(path)] = path.read_text(encoding="utf-8", errors="replace")
    return texts


def leaked_lines(out: Path, secret: set[str]) -> list[tuple[str, str]]:
    """(file, line) for every grader line found in any output of the run in `out`."""
    return [(name, line) for name, text in output_texts(out).items() for line in sorted(secret) if line in text]
