"""Where `make test`'s time goes: the ten slowest tests, the seconds spent per unit, and what fourteen units would take.

    python benchmarks/suite.py [--json] [--durations build/test-durations.json]

Reads the per-test durations that tests/conftest.py writes at the end of every pytest run (with `make test`'s
setup time). A test belongs to a unit when the unit's folder name (solutions/<U>) is in its id (the notebook and
browser tests are parametrized by unit); the others are grouped by area, from their file name
(tests/test_<area>_*.py). Each unit's seconds are set against the budget its manifest (solutions/<U>/unit.toml)
gives it. Seconds are summed over both pytest workers, so they add up to about twice the wall time on 2 cores.

The projection: what is not a released unit's is shared (the library, the grader, the fixtures, the browser's
start-up); `projected_wall_s_14` is setup + (shared + 14 x the mean unit's seconds) / the parallelism this run got
(test-seconds over pytest's wall time). This is a report, not a timed test.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.notebooks.manifest import load_manifest  # noqa: E402


def group_of(nodeid: str, units: list[str]) -> str:
    """The unit a test belongs to (by its parameters), else its area (by its file name)."""
    params = nodeid[nodeid.find("["):] if "[" in nodeid else ""
    for unit in sorted(units, key=len, reverse=True):
        if unit in params:
            return unit
    file = nodeid.split("::")[0]
    m = re.match(r"tests/test_([a-z]+)", file)
    return f"({m.group(1)})" if m else f"({Path(file).stem})"


def summarize(doc: dict, units: list[str], released: list[str] | None = None) -> dict:
    """The report as data: wall time, slowest tests, seconds and test counts per group, budgets of units, and the
    projection to fourteen released units (`released`: the units of solutions/; default `units`)."""
    tests = doc["tests"]
    groups: dict[str, dict] = {}
    for nodeid, t in tests.items():
        g = groups.setdefault(group_of(nodeid, units), {"tests": 0, "seconds": 0.0})
        g["tests"] += 1
        g["seconds"] += t["seconds"]
    for unit in units:
        if unit in groups:
            groups[unit]["budget_s"] = load_manifest(REPO / "solutions" / unit).budget_s
    slowest = sorted(tests.items(), key=lambda kv: -kv[1]["seconds"])[:10]
    total = sum(t["seconds"] for t in tests.values())
    released = [u for u in (released if released is not None else units) if u in groups]
    unit_s = {u: groups[u]["seconds"] for u in released}
    out = {"wall_s": doc.get("wall_s"), "setup_s": doc.get("setup_s"), "test_seconds": round(total, 1),
           "tests": len(tests), "failed": sorted(k for k, t in tests.items() if t["outcome"] == "failed"),
           "slowest": [{"test": k, "seconds": round(t["seconds"], 1)} for k, t in slowest],
           "groups": {k: dict(v, seconds=round(v["seconds"], 1)) for k, v in sorted(groups.items())},
           "units": len(released), "unit_seconds": {u: round(v, 1) for u, v in unit_s.items()}}
    if unit_s:
        mean = sum(unit_s.values()) / len(unit_s)
        shared = total - sum(unit_s.values())
        out.update(unit_seconds_max=round(max(unit_s.values()), 1), unit_seconds_mean=round(mean, 1),
                   unit_seconds_total=round(sum(unit_s.values()), 1), shared_seconds=round(shared, 1))
        wall = doc.get("wall_s")
        if wall:
            parallel = total / wall
            setup = doc.get("setup_s") or 0.0
            out.update(parallelism=round(parallel, 2), make_test_wall_s=round(setup + wall, 1),
                       projected_wall_s_14=round(setup + (shared + 14 * mean) / parallel, 1))
            out["projected_over_this_run"] = round(out["projected_wall_s_14"] / out["make_test_wall_s"], 3)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--durations", type=Path, default=REPO / "build" / "test-durations.json")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the tables")
    args = ap.parse_args(argv)
    if not args.durations.is_file():
        print(f"{args.durations} does not exist: run `make test` (or any pytest run) first", file=sys.stderr)
        return 2
    released = sorted(p.name for p in (REPO / "solutions").iterdir() if (p / f"{p.name}.py").is_file())
    report = summarize(json.loads(args.durations.read_text()), released + ["00_fixture", "00_broken"], released)
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    wall = report["wall_s"]
    print(f"{report['tests']} tests, {report['test_seconds']:.0f} test-seconds over the workers, "
          f"wall time {wall:.0f} s ({wall / 60:.1f} min)" if wall else f"{report['tests']} tests")
    print("\nten slowest tests")
    for row in report["slowest"]:
        print(f"  {row['seconds']:7.1f} s  {row['test']}")
    print(f"\n{'group':28s} {'tests':>5s} {'seconds':>8s} {'budget':>7s}  share")
    for name, g in sorted(report["groups"].items(), key=lambda kv: -kv[1]["seconds"]):
        budget = f"{g['budget_s']:.0f}" if "budget_s" in g else ""
        share = g["seconds"] / report["test_seconds"] if report["test_seconds"] else 0
        over = "  over budget" if "budget_s" in g and g["seconds"] > g["budget_s"] else ""
        print(f"{name:28s} {g['tests']:5d} {g['seconds']:8.1f} {budget:>7s}  {share:5.1%}{over}")
    if "projected_wall_s_14" in report:
        print(f"\n{report['units']} released units: {report['unit_seconds_total']:.0f} test-seconds (mean "
              f"{report['unit_seconds_mean']:.0f}, largest {report['unit_seconds_max']:.0f}); shared "
              f"{report['shared_seconds']:.0f}; parallelism {report['parallelism']:.2f}")
        print(f"make test took {report['make_test_wall_s']:.0f} s (setup {report['setup_s'] or 0:.0f} s); fourteen "
              f"units at this mean would take {report['projected_wall_s_14']:.0f} s "
              f"({report['projected_over_this_run']:.2f}x)")
    if report["failed"]:
        print(f"\nfailed: {len(report['failed'])}: " + ", ".join(report["failed"][:10]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
