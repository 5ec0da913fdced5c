"""Grading throughput: plain `nbgrader autograde` vs our sandboxed grader (1 worker, all cores) vs bare nbclient.

    python benchmarks/grading.py [--unit 01_graphs_ir] [--n 20] [--rounds 1] [--json]

All variants grade the same N honest submissions (the release with the source's solutions filled in). Each round
runs every variant once, in rotating order, and the reported figure is the median over rounds of
(batch wall time / N). `overhead_over_plain_execution` is our 1-worker time over executing the same notebooks
one after another with nbclient (no grading, no sandbox). Targets (issue 5): overhead <= 1.3, and all cores
beat plain nbgrader by at least 0.7 x the core count.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the autograder package lives at the repo root, not in the installed library

from autograder.assemble import release_notebook  # noqa: E402
from autograder.grade import grade, load_unit  # noqa: E402
from autograder.sandbox import Limits, probe  # noqa: E402


def _submissions(unit, n: int, folder: Path) -> Path:
    honest = json.dumps(release_notebook(unit.master, solved=True))
    uploads = folder / "uploads"
    uploads.mkdir(parents=True)
    for i in range(n):
        (uploads / f"s{i:03d}.ipynb").write_text(honest)
    return uploads


def run_nbgrader(unit_name: str, n: int, folder: Path) -> float:
    """Seconds for plain nbgrader: generate_assignment once (not timed), then one autograde of N submissions."""
    import nbformat

    from autograder import nbgrader_course
    from autograder.release import build_source_notebook, data_dir

    root = folder / "nbgrader"
    source = build_source_notebook(unit_name)
    nbgrader_course.make_course_root(root, unit_name, source, data_dir(unit_name))
    released = nbgrader_course.generate_assignment(root, unit_name)
    release_nb = nbformat.read(released, as_version=4)
    for i in range(n):
        nbgrader_course.place_submission(root, unit_name, f"s{i:03d}",
                                         nbgrader_course.make_submission(release_nb, source))
    start = time.perf_counter()
    nbgrader_course.autograde(root, unit_name, n)
    return time.perf_counter() - start


def run_plain(uploads: Path, unit) -> float:
    """Seconds to execute every submission with nbclient, one after another (what grading cannot beat serially)."""
    import nbformat
    from nbclient import NotebookClient

    import autograder.nbgrader_config  # noqa: F401  (installs the jupyter/nbclient#312 guard nbgrader runs with too)

    start = time.perf_counter()
    for path in sorted(uploads.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        with tempfile.TemporaryDirectory() as cwd:
            for name, data in unit.files.items():
                (Path(cwd) / name).parent.mkdir(parents=True, exist_ok=True)
                (Path(cwd) / name).write_bytes(data)
            NotebookClient(nb, timeout=600, allow_errors=True, resources={"metadata": {"path": cwd}}).execute()
    return time.perf_counter() - start


def run_ours(unit_name: str, uploads: Path, out: Path, workers: int) -> float:
    """Seconds for our grader on the uploads with `workers` processes."""
    start = time.perf_counter()
    records = grade(unit_name, uploads, out, workers=workers, limits=Limits(), quiet=True)
    elapsed = time.perf_counter() - start
    bad = [r["student"] for r in records if r["total"] != r["max_total"]]
    if bad:
        raise RuntimeError(f"honest submissions did not get full marks with {workers} worker(s): {bad[:3]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--unit", default="01_graphs_ir")
    parser.add_argument("--n", type=int, default=20, help="honest submissions per batch (default 20)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print one JSON object and nothing else")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    unit = load_unit(args.unit)
    times: dict[str, list[float]] = {"nbgrader": [], "ours_1": [], "ours_all": [], "plain": []}
    with tempfile.TemporaryDirectory(prefix="grading-bench-") as tmp:
        uploads = _submissions(unit, args.n, Path(tmp))
        variants = list(times)
        for r in range(args.rounds):
            order = variants[r % len(variants):] + variants[: r % len(variants)]
            for name in order:
                work = Path(tmp) / f"{name}-{r}"
                work.mkdir()
                if name == "nbgrader":
                    seconds = run_nbgrader(args.unit, args.n, work)
                elif name == "plain":
                    seconds = run_plain(uploads, unit)
                else:
                    seconds = run_ours(args.unit, uploads, work / "out", 1 if name == "ours_1" else cores)
                times[name].append(seconds / args.n)
                if not args.json:
                    print(f"  round {r}: {name:9s} {seconds / args.n:7.2f} s/submission", file=sys.stderr)
    med = {k: statistics.median(v) for k, v in times.items()}
    result = {
        "unit": args.unit, "submissions": args.n, "rounds": args.rounds, "cores": cores,
        "serial_nbgrader_s_per_submission": round(med["nbgrader"], 3),
        "ours_s_per_submission": {"1_worker": round(med["ours_1"], 3), f"{cores}_workers": round(med["ours_all"], 3)},
        "ours_1_worker_s_per_submission": round(med["ours_1"], 3),
        "ours_all_cores_s_per_submission": round(med["ours_all"], 3),
        "plain_nbclient_s_per_submission": round(med["plain"], 3),
        "overhead_over_plain_execution": round(med["ours_1"] / med["plain"], 3),
        "speedup_all_cores_over_nbgrader": round(med["nbgrader"] / med["ours_all"], 3),
        "speedup_target": round(0.7 * cores, 2),
        "isolation": probe(),
    }
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"grading {args.n} honest {args.unit} submissions, {cores} cores, median of {args.rounds} round(s)")
    print(f"{'variant':34s} {'s/submission':>12s} {'vs nbgrader':>12s}")
    for label, key in (("plain nbgrader autograde (serial)", "nbgrader"), ("ours, 1 worker", "ours_1"),
                       (f"ours, {cores} workers", "ours_all"), ("bare nbclient execution", "plain")):
        print(f"{label:34s} {med[key]:12.2f} {med['nbgrader'] / med[key]:11.2f}x")
    print(f"overhead over plain execution (ours 1 worker / nbclient): {result['overhead_over_plain_execution']:.2f}"
          " (target <= 1.3)")
    print(f"all cores vs nbgrader: {result['speedup_all_cores_over_nbgrader']:.2f}x "
          f"(target >= {result['speedup_target']:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
