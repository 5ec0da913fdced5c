"""Turn one submission's per-cell results into scores, statuses and messages a student and an instructor can act on.

A test cell earns its points when the kernel's signer signed an ok verdict for it (autograder/executor.py),
whatever it printed to stderr, unless a probe before it passed or the checking machinery had changed (then it is not
counted and the submission is flagged). A failure's message is the test line it surfaced on (or "a hidden test
failed"), the exception's name and text, and where in the student's own code it was raised: never a frame of the
tests or the library, never the hidden tests' source.
"""
from __future__ import annotations

import re

from .assemble import GradedCell, exercise_of

_CELL_FRAME = re.compile(r"Cell In\[\d+\], line (\d+)")
MESSAGE_CAP = 1500


def own_lines(cells: list[GradedCell]) -> frozenset[str]:
    """The stripped lines of the cells the student wrote (a traceback frame on one of them is the student's)."""
    return frozenset(line.strip() for c in cells if c.author == "student" and c.kind != "markdown"
                     for line in c.source.splitlines() if line.strip())


def _own_frame(result: dict, mine: frozenset[str]) -> str:
    """Where in the student's own code the error was raised (the deepest such frame), or ''."""
    for frame in reversed(result.get("frames") or []):
        path, line, function, text = (list(frame) + ["", 0, "", ""])[:4]
        if text and str(text).strip() in mine and not str(path).startswith("<grading"):
            return f"raised in your code, in {str(function)[:60]}() at `{str(text).strip()[:150]}`"
    return ""


def failure_message(cell: GradedCell, result: dict, mine: frozenset[str] = frozenset()) -> str:
    """What went wrong in a test cell, for the student: where in the test, the error, where in their own code."""
    status = result.get("status")
    if status == "not_run":
        return f"not run: {result.get('evalue') or 'an earlier problem stopped the notebook'}"
    if status == "timeout":
        return result.get("evalue") or "time limit reached"
    if status == "died":
        return f"the kernel died while running this test ({result.get('evalue')})"
    if status == "no_verdict":
        return f"no verdict: {result.get('evalue') or 'the kernel did not run the test as sent'}"
    ename, evalue = result.get("ename") or "Error", (result.get("evalue") or "").strip()
    line = int(result.get("line") or 0)
    if not line:
        match = _CELL_FRAME.search(result.get("traceback", ""))
        line = int(match.group(1)) if match else 0
    where = ""
    lines = cell.source.splitlines()
    if line and cell.hidden and cell.hidden[0] <= line <= cell.hidden[1]:
        where = "a hidden test failed"
    elif 0 < line <= len(lines):
        where = f"line {line}: `{lines[line - 1].strip()[:150]}`"
    text = f"{ename}: {evalue}" if evalue else f"{ename} (no message)"
    if len(text) > MESSAGE_CAP:
        text = text[:MESSAGE_CAP] + " …"
    text = " — ".join(filter(None, [where, text]))
    own = _own_frame(result, mine)
    return f"{text}\n{own}" if own else text


def score(student: str, cells: list[GradedCell], run: dict, findings: list[str], notes: list[str]) -> dict:
    """The grade record of one student: status, totals, per-exercise and per-test results, reason, flags."""
    by_index = {r["index"]: r for r in run.get("results", [])}
    mine = own_lines(cells)
    tests, exercises = [], {}
    harness, untrusted = [], []
    for index, cell in enumerate(cells):
        if cell.kind != "test":
            continue
        exercise = exercise_of(cell.grade_id)
        result = by_index.get(index, {"status": "not_run", "evalue": "not reached"})
        passed = result["status"] == "ok"
        entry = {"grade_id": cell.grade_id, "exercise": exercise, "max": cell.points, "points": 0.0,
                 "status": "pass" if passed else "fail", "message": "", "seconds": result.get("seconds", 0.0)}
        if result.get("canary"):
            entry["status"] = "untrusted"
            entry["message"] = ("not counted: before this test the kernel stopped reporting failures "
                                f"({result['canary']})")
            untrusted.append(f"canary failed before {cell.grade_id}: {result['canary']}")
        elif result.get("tamper"):
            entry["status"] = "untrusted"
            entry["message"] = ("not counted: the checking machinery was changed before this test's verdict "
                                f"({result['tamper']})")
            untrusted.append(f"{cell.grade_id}: changed the checking machinery ({result['tamper']})")
        elif passed:
            entry["points"] = cell.points
        else:
            entry["status"] = {"not_run": "not_run", "timeout": "timed_out", "died": "kernel_died",
                               "no_verdict": "no_verdict"}.get(result["status"], "fail")
            entry["message"] = failure_message(cell, result, mine)
            if result.get("ename") == "HarnessError":
                entry["status"] = "harness_error"
                harness.append(cell.grade_id)
        tests.append(entry)
        ex = exercises.setdefault(exercise, {"score": 0.0, "max": 0.0})
        ex["score"] += entry["points"]
        ex["max"] += cell.points
    flags = list(findings) + untrusted + [f for f in run.get("flags", []) if f not in findings]
    events = list(run.get("events", []))
    if run.get("infrastructure_error"):
        status, reason = "error", "; ".join(events) or "the grader could not run this notebook"
    elif harness:
        status, reason = "error", f"bug in the test harness (not the student's fault) in {', '.join(harness)}"
    elif flags:
        status, reason = "flagged", "tampering suspected; review the flagged lines"
    else:
        status, reason = "graded", ""
    if events and status != "error":
        reason = "; ".join(filter(None, [reason] + events))
    return {"student": student, "status": status, "reason": reason,
            "total": sum(e["score"] for e in exercises.values()),
            "max_total": sum(e["max"] for e in exercises.values()),
            "exercises": exercises, "tests": tests, "flags": flags, "notes": list(notes), "events": events,
            "seconds": round(run.get("seconds", 0.0), 3), "peak_memory_mb": run.get("peak_memory_mb"),
            "mechanisms": run.get("mechanisms", {}), "timings": run.get("timings", {})}
