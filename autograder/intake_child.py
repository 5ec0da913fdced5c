"""Read one student's upload in a process of its own: `python -m autograder.intake_child` < request (JSON).

autograder.intake.read_isolated starts it for every upload, so that reading, decompressing and parsing what a
student sent runs under limits of its own (address space, CPU seconds, no core file; the parent adds a wall clock):
a zip bomb, a notebook nested 100,000 deep or a file that never ends stops this process, and that student gets an
error, while the batch goes on. Prints the Submission as JSON on stdout.
"""
from __future__ import annotations

import dataclasses
import json
import resource
import sys
from pathlib import Path


def _limit(kind: int, value: int) -> None:
    """Lower the soft limit `kind` to `value` (never above the hard limit)."""
    hard = resource.getrlimit(kind)[1]
    resource.setrlimit(kind, (value if hard == resource.RLIM_INFINITY else min(value, hard), hard))


def main() -> int:
    """Apply the request's limits, read the upload, print the Submission."""
    request = json.loads(sys.stdin.buffer.read())
    limits = request["limits"]
    _limit(resource.RLIMIT_AS, limits["memory_mb"] * 2**20)
    _limit(resource.RLIMIT_CPU, limits["cpu_s"])
    _limit(resource.RLIMIT_CORE, 0)
    from autograder.intake import read_submission

    sub = read_submission(request["student"], [Path(p) for p in request["paths"]], request["unit"],
                          Path(request["root"]))
    sys.stdout.write(json.dumps(dataclasses.asdict(sub)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
