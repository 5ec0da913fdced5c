"""`make proof [UNIT=<U>]`: the full proof a unit's author runs before calling the unit done (a closing note quotes it).

    python -m tests.notebooks.proof [--unit U ...] [--skip-mutation] [--workers N]

The same tests as `make test`, with the proof's parameters, then the mutation benchmark:
1. tests/test_notebooks.py for the unit with INFOPT_GRADING_SEEDS=20 (every stored wrong answer under grading seeds
   1..20 on the fast path) and INFOPT_FULL_GRADING=<unit> (every stored wrong answer through nbgrader too, each alone,
   and the release), its browser test, and for unit 01 the grader's batch with every adversarial case and every
   stored wrong answer (tests/test_grader_unit01.py);
2. `benchmarks/mutation.py --unit <unit>`: every exercise kills at least 90% of its non-equivalent mutants.

Prints each step's time and result, and exits 1 when any step fails.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROOF_SEEDS = 20


def pytest_command(units: list[str], workers: int) -> list[str]:
    """The pytest run of the proof: the units' notebook and browser tests (and unit 01's grader batch)."""
    files = ["tests/test_notebooks.py", "tests/test_browser.py"]
    keys = list(units) + ["lab_server_and_browser_start", "nothing_outlives_the_lab_server"]
    if "01_graphs_ir" in units:
        files.append("tests/test_grader_unit01.py")
        keys.append("test_grader_unit01")
    return [sys.executable, "-m", "pytest", *files, "-k", " or ".join(keys), "-n", str(workers),
            "--dist", "loadgroup", "-p", "no:cacheprovider", "-q"]


def proof_env(units: list[str]) -> dict[str, str]:
    """The proof's parameters: 20 grading seeds, and every wrong answer of these units through nbgrader."""
    return dict(os.environ, INFOPT_GRADING_SEEDS=str(PROOF_SEEDS), INFOPT_FULL_GRADING=",".join(units))


def _step(name: str, cmd: list[str], env: dict[str, str]) -> tuple[str, int, float]:
    print(f"\n== {name}: {' '.join(cmd[1:])}", flush=True)
    began = time.monotonic()
    code = subprocess.run(cmd, cwd=REPO, env=env).returncode
    return name, code, time.monotonic() - began


def main(argv: list[str] | None = None) -> int:
    from autograder import release

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--unit", action="append", help="a unit (folder of solutions/); default: every unit")
    ap.add_argument("--skip-mutation", action="store_true", help="leave out the mutation benchmark (not a proof)")
    ap.add_argument("--workers", type=int, default=2, help="pytest workers (default 2)")
    args = ap.parse_args(argv)
    known = release.discover_units()
    units = args.unit or known
    unknown = [u for u in units if u not in known]
    if unknown:
        print(f"proof: no unit {unknown}; the units are {known}", file=sys.stderr)
        return 2
    began = time.monotonic()
    steps = [_step(f"tests of {', '.join(units)} ({PROOF_SEEDS} seeds, every wrong answer through nbgrader)",
                   pytest_command(units, args.workers), proof_env(units))]
    if not args.skip_mutation:
        for unit in units:
            steps.append(_step(f"mutation benchmark of {unit}",
                               [sys.executable, "benchmarks/mutation.py", "--unit", unit], dict(os.environ)))
    print("\n== proof" + (" (without the mutation benchmark: not a full proof)" if args.skip_mutation else ""))
    for name, code, seconds in steps:
        print(f"  {'passed' if code == 0 else 'FAILED'}  {seconds:7.0f} s  {name}")
    total = time.monotonic() - began
    failed = [name for name, code, _ in steps if code != 0]
    print(f"  {'passed' if not failed else 'FAILED'}  {total:7.0f} s  make proof {' '.join(units)} "
          f"({total / 60:.0f} min {total % 60:.0f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
