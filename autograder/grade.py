"""`make grade`: autograde a folder of submissions in sandboxes, in parallel, and write grades, feedback and a summary.

    python -m autograder.grade --unit 01_graphs_ir --submissions path/ [--roster roster.csv] --out build/grades
                               [--workers N] [--dask local|tcp://scheduler:8786]

Pipeline: intake (take only the notebook, check it) -> assemble (restore grading cells/metadata) -> tamper scan
-> run in a sandbox, cell by cell -> score, each worker into its own gradebook -> grades.csv,
feedback/<student>.html, summary.html, and gradebook.db with the workers' gradebooks merged in.
`grade_one` is the unit of work; it is a plain function of plain data, so a process pool or a Dask cluster runs it.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import json
import os
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterable

from .assemble import GradedCell, assemble, load_master
from .intake import Submission, find_submissions, load_roster
from .sandbox import Limits
from .scrub import Scrubber, secret_lines

REPO = Path(__file__).resolve().parent.parent


@dataclasses.dataclass
class Unit:
    """What grading one unit needs: its name, the instructor's cells, the release notebook and companion files."""

    name: str
    master: list
    release: dict | None
    files: dict[str, bytes]
    scrubber: Scrubber = dataclasses.field(default_factory=lambda: Scrubber(()))
    in_kernel: dict = dataclasses.field(default_factory=dict)   # exercise -> why its tests run in the kernel


def load_unit(unit: str, source: Path | None = None, release: Path | None = None) -> Unit:
    """Read the unit's source (solutions/<unit>/<unit>.py, via autograder.release) and release (course/<unit>/)."""
    from .assemble import master_from_cells, release_notebook
    from .release import build_source_notebook

    if not unit:
        raise ValueError("no unit given: pass --unit, e.g. --unit 01_graphs_ir")
    source = Path(source) if source else REPO / "solutions" / unit / f"{unit}.py"
    unit_dir = source.parent
    if source.suffix == ".py" and source.stem == unit == source.parent.name:
        master = master_from_cells(build_source_notebook(unit, source.parent.parent).cells)
    else:
        master = load_master(source)
    release = Path(release) if release else REPO / "course" / unit / f"{unit}.ipynb"
    release_nb = json.loads(release.read_text(encoding="utf-8")) if release.is_file() else None
    files: dict[str, bytes] = {}
    if release_nb is None:  # no built release: stubs and cell ids derived from the source
        release_nb = release_notebook(master)
    elif release.parent.is_dir():
        for path in sorted(release.parent.rglob("*")):
            rel = path.relative_to(release.parent)
            if (path.is_file() and not path.is_symlink() and path != release and not any(
                    part.startswith(".") for part in rel.parts) and path.suffix != ".ipynb"
                    and path.stat().st_size < 64 * 2**20):
                files[str(rel)] = path.read_bytes()
    public = []
    for cell in release_nb.get("cells", []):
        source = cell.get("source", "")
        public += ("".join(source) if isinstance(source, list) else source).splitlines()
    scrubber = Scrubber(secret_lines(c.source for c in master if c.kind in ("solution", "test", "manual")), public)
    from .judge import in_kernel

    return Unit(unit, master, release_nb, files, scrubber, in_kernel(unit_dir))


def make_job(unit: Unit, submission: Submission, limits: Limits, log_dir: Path) -> dict:
    """The plain-data job for one submission (picklable for a process pool or Dask)."""
    from infopt.grading.copies import near_copies
    from infopt.grading.tamper import scan_cells, shadowed_module

    cells, notes = assemble(submission.notebook, unit.master, unit.release)
    labelled = [(c.grade_id or f"cell {i}", c.source) for i, c in enumerate(cells)
                if c.author == "student" and c.kind != "markdown"]
    findings = [str(f) for f in scan_cells(labelled)]
    findings += [str(c) for c in near_copies(labelled)]  # pasted library code: flagged for the instructor
    findings += [f"upload ships `{name}`, which would shadow the module `{shadowed_module(name)}` (not used)"
                 for name in submission.shipped if shadowed_module(name)]
    findings += submission.flags
    return {"student": submission.student, "cells": [dataclasses.asdict(c) for c in cells],
            "notes": submission.notes + notes, "findings": findings, "limits": dataclasses.asdict(limits),
            "log_path": str(Path(log_dir) / f"{submission.student}.jsonl"), "files": unit.files,
            "scrub": unit.scrubber.spec()}


def grade_one(job: dict) -> dict:
    """Run one job in a fresh sandbox and score it; never raises (a grader failure becomes status 'error')."""
    from .executor import run_notebook
    from .scoring import score

    cells = [GradedCell(**{**c, "hidden": tuple(c["hidden"]) if c.get("hidden") else None}) for c in job["cells"]]
    scrub = Scrubber.from_spec(job.get("scrub"))
    started = time.monotonic()
    try:
        run = run_notebook(job["cells"], Limits(**job["limits"]), Path(job["log_path"]), files=job.get("files"),
                           scrub=scrub, judge=job.get("judge"), seed=job.get("seed"))
    except Exception as err:  # noqa: BLE001 (reported per student, the batch goes on)
        run = {"results": [], "events": [f"grader failure: {type(err).__name__}: {err}"],
               "infrastructure_error": True, "seconds": time.monotonic() - started}
    record = scrub.deep(score(job["student"], cells, run, job["findings"], job["notes"]))
    if job.get("gradebook"):  # this worker's own gradebook, merged into the course's at the end
        from .report import record_in_worker_gradebook

        try:
            record_in_worker_gradebook(record, job["gradebook"])
        except Exception as err:  # noqa: BLE001 (the parent stores the record itself instead)
            record["events"].append(f"worker gradebook not written ({type(err).__name__}: {err}); merged from the record")
    return record


def _zero_record(student: str, status: str, reason: str, tests: Iterable[tuple[str, float]], notes: list[str],
                 events: list[str] | None = None) -> dict:
    """The record of a student with no score: every exercise at 0 of its points (`tests`: (grade_id, points))."""
    from .assemble import exercise_of

    exercises: dict[str, dict] = {}
    for grade_id, points in tests:
        exercises.setdefault(exercise_of(grade_id), {"score": 0.0, "max": 0.0})["max"] += points
    return {"student": student, "status": status, "reason": reason, "total": 0.0,
            "max_total": sum(e["max"] for e in exercises.values()), "exercises": exercises, "tests": [],
            "flags": [], "notes": notes, "events": events or [], "seconds": 0.0}


def _intake_record(sub: Submission, unit: Unit) -> dict:
    """The record of a student who never reached the sandbox (missing or broken submission)."""
    tests = [(c.grade_id, c.points) for c in unit.master if c.kind == "test"]
    return {**_zero_record(sub.student, sub.status, sub.message, tests, sub.notes), "origin": sub.origin}


def _progress(done: int, total: int, record: dict, quiet: bool) -> None:
    if quiet:
        return
    width = 24
    bar = "#" * (width * done // max(total, 1))
    line = (f"\r[{bar:<{width}}] {done}/{total}  {record['student']}: {record['status']} "
            f"{record['total']:g}/{record['max_total']:g} ({record.get('seconds', 0):.1f} s)")
    sys.stderr.write(line + ("\n" if done == total or not sys.stderr.isatty() else ""))
    sys.stderr.flush()


def run_jobs(jobs: list[dict], workers: int = 1, dask: str | None = None,
             on_done: Callable[[dict], None] | None = None, work: Callable[[dict], dict] = grade_one) -> list[dict]:
    """Grade jobs with `workers` processes (1: in this process) or on a Dask cluster ('local' or an address).

    A worker process that dies (killed for memory, or a crash below Python) costs only the student it was grading:
    the jobs it took down with it are graded again, each in a process of its own, and a job that kills that one
    too gets an error record."""
    results: list[dict] = []

    def finish(record: dict) -> None:
        results.append(record)
        on_done and on_done(record)

    if dask:
        from distributed import Client, LocalCluster, as_completed

        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=None) if dask == "local" else None
        try:
            with Client(cluster if cluster else dask) as client:
                futures = {client.submit(work, job, pure=False): job for job in jobs}
                for future in as_completed(futures):
                    try:
                        finish(future.result())
                    except Exception as err:  # noqa: BLE001 (a lost worker costs its student, not the batch)
                        finish(_lost_record(futures[future], err))
        finally:
            if cluster is not None:
                cluster.close()
    elif workers <= 1:
        for job in jobs:
            finish(work(job))
    else:
        lost = _run_pool(jobs, workers, work, finish)
        for job in lost:  # alone, so that a second death is this job's own
            again = _run_pool([job], 1, work, finish)
            for dead in again:
                finish(_lost_record(dead, None))
    return results


def _run_pool(jobs: list[dict], workers: int, work: Callable[[dict], dict],
              finish: Callable[[dict], None]) -> list[dict]:
    """Run jobs in a process pool; return the jobs whose worker died before it returned."""
    lost: list[dict] = []
    with concurrent.futures.ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(work, job): job for job in jobs}
        for future in concurrent.futures.as_completed(futures):
            try:
                finish(future.result())
            except concurrent.futures.process.BrokenProcessPool:
                lost.append(futures[future])
            except Exception as err:  # noqa: BLE001 (grade_one never raises; any other work function may)
                finish(_lost_record(futures[future], err))
    return lost


def _lost_record(job: dict, err: BaseException | None) -> dict:
    """The error record of a student whose grading process died or failed (the rest of the batch goes on)."""
    why = (f"{type(err).__name__}: {err}" if err is not None else
           "the process grading this notebook died twice (killed for memory, or crashed)")
    tests = [(c["grade_id"], c.get("points", 0.0)) for c in job.get("cells", []) if c.get("kind") == "test"]
    record = _zero_record(job["student"], "error", f"grader failure: {why}; grade this student again alone", tests,
                          list(job.get("notes", [])), [f"grader failure: {why}"])
    return Scrubber.from_spec(job.get("scrub")).deep(record)


def grade(unit: str, submissions: Path, out: Path, roster: Path | None = None, workers: int | None = None,
          limits: Limits | None = None, source: Path | None = None, release: Path | None = None,
          dask: str | None = None, quiet: bool = False, gradebook: Path | None = None,
          judged: bool = True) -> list[dict]:
    """Grade every submission of `unit` under `submissions`; write the outputs into `out`; return the records.

    `judged` (the default): every test is decided by one judge process for the batch (autograder/judge.py), outside
    the student's kernel. False grades the old way, every test inside the kernel (kept for comparison)."""
    from .report import write_outputs

    out = Path(out).resolve()
    for protected in (REPO / "solutions", REPO / "course"):
        if out == protected or protected in out.parents:
            raise ValueError(f"--out {out} is inside {protected}; grading output must go elsewhere (e.g. build/)")
    limits = limits or Limits()
    loaded = load_unit(unit, source, release)
    ids = load_roster(roster) if roster else None
    workers = workers or os.cpu_count() or 1
    found = find_submissions(Path(submissions), unit, ids, workers=workers)  # each upload read by its own process
    out.mkdir(parents=True, exist_ok=True)
    log_dir = out / "logs"
    jobs, records = [], []
    for sub in found.values():
        if sub.status != "ok":
            records.append(loaded.scrubber.deep(_intake_record(sub, loaded)))
            continue
        try:
            job = make_job(loaded, sub, limits, log_dir)
        except Exception as err:  # noqa: BLE001 (a notebook the assembler cannot read is that student's error)
            sub.status, sub.message = "error", f"could not assemble the notebook: {type(err).__name__}: {err}"
            records.append(loaded.scrubber.deep(_intake_record(sub, loaded)))
            continue
        job["origin"] = sub.origin
        jobs.append(job)
    gb_spec = _worker_gradebooks(loaded, out / "gradebooks") if jobs and dask in (None, "local") else None
    judge = None
    if judged and jobs:
        if dask not in (None, "local"):
            raise ValueError("a remote Dask cluster cannot reach this machine's judge; grade with --workers here, "
                             "or pass --in-kernel to decide the tests in the students' kernels (weaker)")
        from .judge import Judge

        judge = Judge(loaded.master, loaded.files, Path(tempfile.mkdtemp(prefix="infopt-judge-")),
                      timeout_s=limits.wall_s, in_kernel=loaded.in_kernel)
    for job in jobs:
        job["gradebook"] = gb_spec
        job["judge"] = judge.spec() if judge else None
        job["seed"] = _seed()
    done = [len(records)]
    total = len(found)

    def on_done(record: dict) -> None:
        done[0] += 1
        _progress(done[0], total, record, quiet)

    origins = {job["student"]: job["origin"] for job in jobs}
    try:
        graded = run_jobs(jobs, min(workers, max(len(jobs), 1)), dask, on_done)
    finally:
        if judge is not None:
            for problem in judge.problems():  # the instructor's own notebook failed in the judge: a harness bug
                print(f"grade: the judge's run of the instructor's notebook: {problem}", file=sys.stderr)
            judge.close()
            shutil.rmtree(judge.folder, ignore_errors=True)
    for record in graded:
        record["origin"] = origins.get(record["student"], "")
    order = {student: i for i, student in enumerate(found)}
    records = sorted(records + graded, key=lambda r: order.get(r["student"], len(order)))
    parts = sorted((out / "gradebooks").glob("worker-*.db")) if gb_spec else []
    dest = Path(gradebook) if gradebook else out / "gradebook.db"
    if gb_spec and not dest.exists():
        shutil.copyfile(gb_spec["template"], dest)  # an empty gradebook with the grade cells: no second migration
    write_outputs(records, loaded, out, dest, parts)
    return records


def _seed() -> int:
    """A student's grading seed: INFOPT_GRADING_SEED when set (to reproduce a grading), else drawn per student."""
    from infopt.grading import SEED_ENV

    env = os.environ.get(SEED_ENV)
    return int(env) if env and env.lstrip("-").isdigit() else secrets.randbits(32)


def _worker_gradebooks(unit: Unit, folder: Path) -> dict:
    """A fresh folder for the workers' own gradebooks, with a template (assignment and grade cells) they copy."""
    from .report import grade_cells, init_gradebook, open_gradebook

    shutil.rmtree(folder, ignore_errors=True)  # gradebooks of an earlier run must not merge into this one
    folder.mkdir(parents=True, mode=0o700)
    template = folder / "template.db"
    cells = grade_cells(unit)
    with open_gradebook(template) as gb:
        init_gradebook(gb, unit.name, cells)
    return {"dir": str(folder), "template": str(template), "unit": unit.name, "cells": cells}


def main(argv: Iterable[str] | None = None) -> int:
    """Command-line entry point (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m autograder.grade", description=__doc__.splitlines()[0])
    parser.add_argument("--unit", required=True, help="unit folder name, e.g. 01_graphs_ir")
    parser.add_argument("--submissions", required=True, help="nbgrader submitted/ tree or folder of uploads")
    parser.add_argument("--roster", help="CSV of student ids (column id/student_id, or the first column)")
    parser.add_argument("--out", default="build/grades", help="output folder (default build/grades)")
    parser.add_argument("--workers", type=int, default=None, help="parallel workers (default: number of cores)")
    parser.add_argument("--dask", default=None, help="'local' for a LocalCluster, or a scheduler address")
    parser.add_argument("--source", help="instructor source (default solutions/<unit>/<unit>.py)")
    parser.add_argument("--release", help="release notebook (default course/<unit>/<unit>.ipynb)")
    for field in dataclasses.fields(Limits):
        parser.add_argument("--" + field.name.replace("_", "-"), type=type(field.default), default=field.default,
                            help=f"sandbox limit {field.name} (default {field.default})")
    parser.add_argument("--gradebook", help="nbgrader gradebook to merge the scores into (default OUT/gradebook.db)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--in-kernel", action="store_true",
                        help="decide the tests inside the students' kernels, not in the judge (weaker: see README)")
    args = parser.parse_args(list(argv) if argv is not None else None)
    if not args.submissions:
        parser.error("--submissions is empty: pass the folder of submissions (make grade SUBMISSIONS=...)")
    limits = Limits(**{f.name: getattr(args, f.name) for f in dataclasses.fields(Limits)})
    try:
        records = grade(args.unit, Path(args.submissions), Path(args.out), Path(args.roster) if args.roster else None,
                        args.workers, limits, Path(args.source) if args.source else None,
                        Path(args.release) if args.release else None, args.dask, args.quiet,
                        Path(args.gradebook) if args.gradebook else None, judged=not args.in_kernel)
    except (FileNotFoundError, ValueError) as err:
        print(f"grade: {err}", file=sys.stderr)
        return 2
    counts: dict[str, int] = {}
    for record in records:
        counts[record["status"]] = counts.get(record["status"], 0) + 1
    print(f"graded {len(records)} students: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
          + f"; outputs in {Path(args.out).resolve()}")
    from .sandbox import probe

    weak = {k: v for k, v in probe().items() if v != "yes"}
    print("isolation: " + ("all mechanisms in use" if not weak else
                           "WEAKER than designed: " + "; ".join(f"{k}: {v}" for k, v in weak.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
