"""Grade candidate wrong answers the way the stored ones are graded, and print what a student would be told.

    python -m tests.notebooks.try_answers --unit 08_llm DIR [--seeds 5]

DIR holds files named `<exercise>__<slug>.py`, each the whole code of that exercise's solution cell (the format of
solutions/<U>/wrong/). Each is graded on the fast path (tests/notebooks/fastpath.py: the solution notebook runs
once, and each answer replaces its exercise's cell in a fork) under grading seeds 1..N, and one line per answer says
its points under each seed and the first lines of the failure a student sees. An answer that earns points under
any seed is a hole in the hidden tests. This is the blind red team's tool (autograder/README.md, "Before a unit is
called done"): it shows feedback, never the hidden tests.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def candidates(folder: Path) -> dict[str, tuple[str, str]]:
    """{answer id: (exercise, code)} for every `<exercise>__<slug>.py` in `folder`."""
    out = {}
    for p in sorted(Path(folder).glob("*.py")):
        ex, sep, slug = p.stem.partition("__")
        if not sep or not slug:
            raise SystemExit(f"{p}: name the file <exercise>__<slug>.py (the exercise's grade_id, two underscores)")
        out[p.stem] = (ex, p.read_text())
    return out


def main(argv: list[str] | None = None) -> int:
    from autograder import release
    from tests.notebooks.fastpath import Variant, job_cells, run_fast_path
    from tests.notebooks.harness import CELL_TIMEOUT_S, exercise_order

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--unit", required=True, help="the unit (a folder of solutions/)")
    ap.add_argument("folder", type=Path, help="folder of <exercise>__<slug>.py answers")
    ap.add_argument("--seeds", type=int, default=5, help="grade under grading seeds 1..N (default 5)")
    ap.add_argument("--json", type=Path, help="also write the outcomes here")
    args = ap.parse_args(argv)
    source_nb = release.build_source_notebook(args.unit, release.SOLUTIONS)
    known = exercise_order(source_nb)
    answers = candidates(args.folder)
    unknown = sorted({ex for ex, _ in answers.values()} - set(known))
    if unknown:
        raise SystemExit(f"no exercise {unknown} in {args.unit}; its exercises are {known}")
    seeds = tuple(range(1, args.seeds + 1))
    variants = [Variant(aid, ex, code, seeds=seeds) for aid, (ex, code) in answers.items()]
    # the solution itself, graded the same way: an answer's rejection means nothing where the solution fails too
    solutions = {c["grade_id"]: c["source"] for c in job_cells(source_nb) if c["role"] == "solution"}
    exercises = sorted({ex for ex, _ in answers.values()})
    variants += [Variant(f"control:{ex}", ex, solutions[ex], seeds=seeds) for ex in exercises]
    result = run_fast_path(source_nb, variants, release.data_dir(args.unit, release.SOLUTIONS),
                           cell_timeout_s=CELL_TIMEOUT_S, budget_s=3600)
    broken = []
    for ex in exercises:
        outs = [result.variants[f"control:{ex}@seed{s}"] for s in seeds]
        if any(o.score < o.max for o in outs):
            failed = next(o for o in outs if o.score < o.max)
            broken.append(ex)
            print(f"CONTROL FAILED  {ex}: the solution itself scores {[o.score for o in outs]} of {outs[0].max:g}, "
                  f"so the answers below prove nothing for it\n    " + failed.message[:700].replace("\n", "\n    "))
    rows, holes = [], 0
    for aid in answers:
        outs = [result.variants[f"{aid}@seed{s}"] for s in seeds]
        earned = [o.score for o in outs]
        holes += any(e > 0 for e in earned)
        first_fail = next((o for o in outs if o.score == 0), outs[0])
        rows.append({"answer": aid, "points": earned, "max": outs[0].max,
                     "message": first_fail.message[:700]})
        mark = "EARNED POINTS" if any(e > 0 for e in earned) else "rejected"
        print(f"{mark:13}  {aid}: points per seed {earned} of {outs[0].max:g}")
        if first_fail.message:
            print("    " + first_fail.message[:700].replace("\n", "\n    "))
    print(f"\n{holes} of {len(answers)} answers earned points under at least one of {len(seeds)} seeds")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    if broken:
        print(f"the solution itself lost points on {broken}: fix the tests before reading the rejections above")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
