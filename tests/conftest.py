"""Shared pytest configuration. Kept small: fixtures live with the tests that use them (tests/notebooks/ for the
notebook harness).

It also watches the suite's time budget: every test's duration (setup + call + teardown, as the xdist controller
receives them) goes to build/test-durations.json when the session ends, with `make test`'s setup seconds
(INFOPT_SETUP_S); `benchmarks/suite.py` reads it.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

DURATIONS = Path(__file__).resolve().parents[1] / "build" / "test-durations.json"
_times: dict[str, dict] = {}
_start = time.time()


def pytest_runtest_logreport(report) -> None:
    """Add each phase's duration to its test (on the controller under xdist, in the only process otherwise)."""
    entry = _times.setdefault(report.nodeid, {"seconds": 0.0, "outcome": "passed", "worker": None})
    entry["seconds"] += float(report.duration)
    gateway = getattr(getattr(report, "node", None), "gateway", None)  # xdist: the worker that ran it
    entry["worker"] = gateway.id if gateway is not None else "main"
    if report.failed:
        entry["outcome"] = "failed"
    elif report.skipped and report.when in ("setup", "call"):
        entry["outcome"] = "skipped"


def pytest_sessionfinish(session, exitstatus) -> None:
    """Write build/test-durations.json (the controller only: xdist workers report to it)."""
    if hasattr(session.config, "workerinput") or not _times:
        return
    DURATIONS.parent.mkdir(parents=True, exist_ok=True)
    setup = os.environ.get("INFOPT_SETUP_S")  # `make test` passes its setup's seconds
    doc = {"wall_s": round(time.time() - _start, 1), "setup_s": float(setup) if setup else None,
           "exitstatus": int(exitstatus),
           "workers": int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", 0) or 0) or None,
           "tests": {k: dict(v, seconds=round(v["seconds"], 3)) for k, v in sorted(_times.items())}}
    DURATIONS.write_text(json.dumps(doc, indent=1) + "\n")
