"""Grading throughput: plain `nbgrader autograde` vs our sandboxed grader (1 worker, then a 2-worker batch) vs bare
nbclient, and what the sandbox itself costs to start and tear down.

    python benchmarks/grading.py [--unit 01_graphs_ir] [--n 20] [--rounds 1] [--batch-workers 2] [--json]

All variants grade the same N honest submissions (the release with the source's solutions filled in, each with its
own metadata so no two are byte-identical). Each round runs every variant once, in rotating order, and the reported
figure is the median over rounds of (batch wall time / N). Keys of the --json object:
- `sandbox_overhead_ratio`: our grader, 1 worker, over plain nbgrader, serial, per submission (target <= 1.3).
- `sandbox_start_s` / `sandbox_teardown_s`: medians over our 1-worker run of the sandbox's own start (folders,
  cgroups, uid lease, the kernel started inside bubblewrap until it answers) and teardown (kill, cgroup and folder
  removal); `plain_kernel_start_s` / `plain_kernel_teardown_s`: the same kernel started and stopped with no sandbox,
  measured in the same run, so `sandbox_start_overhead_s` is what the sandbox adds. `verdict_handshake_s` is the
  kernel's hello (it imports the checker and library modules the notebook imports anyway, and snapshots them).
- `batch_workers_s_per_submission`: the N-submission batch with `--batch-workers` workers, from the same run.
- `overhead_over_plain_execution`: our 1-worker time over executing the notebooks with nbclient (no grading).
The machine's load average before and after is reported: read the ratios, not the absolute times.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the autograder package lives at the repo root, not in the installed library

from autograder.grade import grade, load_unit  # noqa: E402
from autograder.sandbox import Limits, probe  # noqa: E402


def _submissions(unit, n: int, folder: Path) -> Path:
    """N honest uploads: the release with the source's solutions filled in (what plain nbgrader grades too)."""
    import nbformat

    from autograder import nbgrader_course
    from autograder.release import build_source_notebook

    honest = nbgrader_course.make_submission(nbformat.from_dict(unit.release), build_source_notebook(unit.name))
    uploads = folder / "uploads"
    uploads.mkdir(parents=True)
    for i in range(n):  # real notebooks differ (metadata, outputs): identical ones would be flagged as copies
        honest.metadata["student"] = f"s{i:03d}"
        nbformat.write(honest, uploads / f"s{i:03d}.ipynb")
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


def run_ours(unit_name: str, uploads: Path, out: Path, workers: int) -> tuple[float, list[dict]]:
    """(seconds, records) for our grader on the uploads with `workers` processes."""
    start = time.perf_counter()
    records = grade(unit_name, uploads, out, workers=workers, limits=Limits(), quiet=True)
    elapsed = time.perf_counter() - start
    bad = [(r["student"], r["status"], r["reason"][:80]) for r in records
           if r["total"] != r["max_total"] or r["status"] != "graded"]
    if bad:
        raise RuntimeError(f"honest submissions not graded in full with {workers} worker(s): {bad[:3]}")
    return elapsed, records


def run_plain_kernels(n: int) -> tuple[list[float], list[float]]:
    """(start seconds, teardown seconds) of n kernels started and stopped with jupyter_client, no sandbox."""
    from jupyter_client.manager import KernelManager

    starts, stops = [], []
    for _ in range(n):
        began = time.perf_counter()
        km = KernelManager(kernel_name="python3", transport="ipc",
                           ip=os.path.join(tempfile.mkdtemp(prefix="bench-kernel-"), "kernel"))
        km.start_kernel(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=120)
        starts.append(time.perf_counter() - began)
        began = time.perf_counter()
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        km.cleanup_resources()
        stops.append(time.perf_counter() - began)
    return starts, stops


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--unit", default="01_graphs_ir")
    parser.add_argument("--n", type=int, default=20, help="honest submissions per batch (default 20)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--batch-workers", type=int, default=2, help="workers for the batch figure (default 2)")
    parser.add_argument("--json", action="store_true", help="print one JSON object and nothing else")
    args = parser.parse_args()
    if args.n < 1 or args.rounds < 1 or args.batch_workers < 1:
        parser.error("--n, --rounds and --batch-workers must be at least 1")
    cores = os.cpu_count() or 1
    load_before = os.getloadavg()
    unit = load_unit(args.unit)
    times: dict[str, list[float]] = {"nbgrader": [], "ours_1": [], "ours_batch": [], "plain": []}
    phases: dict[str, list[float]] = {"start": [], "hello": [], "teardown": [], "plain_start": [],
                                      "plain_teardown": []}
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
                    starts, stops = run_plain_kernels(min(args.n, 5))
                    phases["plain_start"] += starts
                    phases["plain_teardown"] += stops
                else:
                    seconds, records = run_ours(args.unit, uploads, work / "out",
                                                1 if name == "ours_1" else args.batch_workers)
                    if name == "ours_1":
                        for record in records:
                            timing = record.get("timings") or {}
                            phases["start"].append(timing.get("setup_s", 0.0) + timing.get("kernel_s", 0.0))
                            phases["hello"].append(timing.get("hello_s", 0.0))
                            phases["teardown"].append(timing.get("teardown_s", 0.0))
                times[name].append(seconds / args.n)
                if not args.json:
                    print(f"  round {r}: {name:10s} {seconds / args.n:7.2f} s/submission", file=sys.stderr)
    med = {k: statistics.median(v) for k, v in times.items()}
    phase = {k: round(statistics.median(v), 3) if v else None for k, v in phases.items()}
    result = {
        "unit": args.unit, "submissions": args.n, "rounds": args.rounds, "cores": cores,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "serial_nbgrader_s_per_submission": round(med["nbgrader"], 3),
        "ours_1_worker_s_per_submission": round(med["ours_1"], 3),
        "batch_workers": args.batch_workers,
        "batch_workers_s_per_submission": round(med["ours_batch"], 3),
        "plain_nbclient_s_per_submission": round(med["plain"], 3),
        "sandbox_overhead_ratio": round(med["ours_1"] / med["nbgrader"], 3),
        "sandbox_overhead_target": 1.3,
        "sandbox_start_s": phase["start"], "sandbox_teardown_s": phase["teardown"],
        "verdict_handshake_s": phase["hello"],
        "plain_kernel_start_s": phase["plain_start"], "plain_kernel_teardown_s": phase["plain_teardown"],
        "sandbox_start_overhead_s": (round(phase["start"] - phase["plain_start"], 3)
                                     if phase["start"] is not None and phase["plain_start"] is not None else None),
        "overhead_over_plain_execution": round(med["ours_1"] / med["plain"], 3),
        "speedup_batch_over_nbgrader": round(med["nbgrader"] / med["ours_batch"], 3),
        "isolation": probe(),
    }
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"grading {args.n} honest {args.unit} submissions, {cores} cores, median of {args.rounds} round(s); "
          f"load average {result['load_average_before'][0]} before, {result['load_average_after'][0]} after")
    print(f"{'variant':36s} {'s/submission':>12s} {'vs nbgrader':>12s}")
    for label, key in (("plain nbgrader autograde (serial)", "nbgrader"), ("ours, 1 worker (serial)", "ours_1"),
                       (f"ours, {args.batch_workers} workers (batch)", "ours_batch"),
                       ("bare nbclient execution", "plain")):
        print(f"{label:36s} {med[key]:12.2f} {med['nbgrader'] / med[key]:11.2f}x")
    print(f"sandbox overhead ratio (ours 1 worker / plain nbgrader): {result['sandbox_overhead_ratio']:.2f}"
          " (target <= 1.3)")
    print(f"sandbox start {phase['start']} s vs plain kernel start {phase['plain_start']} s; "
          f"sandbox teardown {phase['teardown']} s vs plain kernel teardown {phase['plain_teardown']} s")
    print(f"overhead over plain execution (ours 1 worker / nbclient): {result['overhead_over_plain_execution']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
