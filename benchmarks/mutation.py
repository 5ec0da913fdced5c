"""Mutation scores of the exercises: how many small bugs planted in each solution the hidden tests catch.

    python benchmarks/mutation.py [--unit U ...] [--exercise EX ...] [--json] [--max-per-exercise N]

Each exercise's solution (the lines between BEGIN and END SOLUTION, what a student writes) is mutated with Cosmic
Ray's operators (cosmic-ray, a kept mutation-testing library: arithmetic, comparison, boolean and unary operator
replacement, numbers, True/False/None, `not` added, loops run zero times, break/continue swapped, exceptions,
decorators removed). Every mutant that compiles is graded through the fast path (tests/notebooks/fastpath.py:
the solution notebook runs once, each mutant is forked in at its exercise and scored on that exercise's test,
visible and hidden). A mutant is killed when its test scores zero.

A surviving mutant is either a gap in the hidden tests, or equivalent to the solution (it computes the same thing);
`solutions/<U>/mutants.toml` lists each equivalent one with why:

    [[equivalent]]
    exercise = "fold"
    mutant = "core/ReplaceComparisonOperator_Eq_Is: if i == \"\" -> if i is \"\""
    why = "the empty string is interned: `is` and `==` agree on it"

score = killed / (mutants - equivalent); the target is >= 0.90 per exercise. The script prints one table row per
exercise and every surviving mutant not listed as equivalent, and exits 1 when an exercise is under target. It is
not part of `make test` (a unit takes minutes).
"""
from __future__ import annotations

import argparse
import difflib
import json
import sys
import time
import tomllib
import warnings
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from autograder import release  # noqa: E402
from autograder.nbgrader_course import BEGIN_SOLUTION, END_SOLUTION, solution_body  # noqa: E402
from tests.notebooks.fastpath import Variant, run_fast_path  # noqa: E402

TARGET = 0.90
_ARITH = ("Add", "Sub", "Mul", "Div", "FloorDiv", "Mod", "Pow")


def operator_names() -> list[str]:
    """The Cosmic Ray operators used: every core operator except binary replacements into bit and shift
    operators (a `+` turned into `<<` is caught by anything; it would only inflate the score)."""
    from cosmic_ray.plugins import operator_names as all_names

    keep = []
    for name in sorted(all_names()):
        if not name.startswith("core/"):
            continue
        if name.startswith("core/ReplaceBinaryOperator_"):
            a, b = name.removeprefix("core/ReplaceBinaryOperator_").split("_")
            if a not in _ARITH or b not in _ARITH:
                continue
        if name in ("core/VariableInserter", "core/VariableReplacer"):   # need arguments; random by design
            continue
        keep.append(name)
    return keep


@dataclass(frozen=True)
class Mutant:
    exercise: str
    key: str       # "operator: line before -> line after" (+ " #k" for the k-th identical one)
    code: str      # the whole solution cell, mutated


def _solution_lines(source: str) -> tuple[int, int]:
    """(first, last) 1-based line numbers of the student's part of a solution cell, in its marker-free body."""
    lines = source.splitlines()
    begin = next(i for i, ln in enumerate(lines) if ln.strip() == BEGIN_SOLUTION)
    end = next(i for i, ln in enumerate(lines) if ln.strip() == END_SOLUTION)
    return begin + 1, end - 1   # the BEGIN line itself is dropped from the body, so indices shift by one


def mutants_of(exercise: str, cell_source: str, operators: list[str]) -> list[Mutant]:
    """Every distinct compiling mutant of the student's part of one solution cell."""
    from cosmic_ray.mutating import mutate_code
    from cosmic_ray.plugins import get_operator

    body = solution_body(cell_source)
    first, last = _solution_lines(cell_source)
    original = body.splitlines()
    seen: dict[str, int] = {}
    out: list[Mutant] = []
    codes = {body}
    for name in operators:
        operator = get_operator(name)()
        occurrence = 0
        while True:
            try:
                code = mutate_code(body, operator, occurrence)
            except Exception:  # noqa: BLE001 (an operator that cannot handle this code makes no mutant)
                code = None
            occurrence += 1
            if code is None:
                break
            if code in codes:
                continue
            changed = [i for i, (a, b) in enumerate(zip(original, code.splitlines())) if a != b]
            if len(code.splitlines()) != len(original) or not changed:
                diff = [ln for ln in difflib.ndiff(original, code.splitlines()) if ln[:1] in "+-"]
                changed_idx = None
                before, after = (diff[0][2:].strip() if diff else ""), (diff[1][2:].strip() if len(diff) > 1 else "")
            else:
                changed_idx = changed[0]
                before, after = original[changed_idx].strip(), code.splitlines()[changed_idx].strip()
            if changed_idx is not None and not first <= changed_idx + 1 <= last:
                continue  # outside the student's part (the given signature and docstring)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")   # `x is ""` warns; the mutant still counts
                    compile(code, f"<{exercise}>", "exec")
            except SyntaxError:
                continue
            codes.add(code)
            key = f"{name}: {before} -> {after}"
            seen[key] = seen.get(key, 0) + 1
            out.append(Mutant(exercise, key + (f" #{seen[key]}" if seen[key] > 1 else ""), code))
    return out


def load_equivalents(unit: str) -> dict[tuple[str, str], str]:
    """{(exercise, mutant key): why} from solutions/<U>/mutants.toml."""
    path = REPO / "solutions" / unit / "mutants.toml"
    if not path.is_file():
        return {}
    rows = tomllib.loads(path.read_text()).get("equivalent", [])
    for i, row in enumerate(rows):
        if set(row) != {"exercise", "mutant", "why"}:
            raise ValueError(f"{path}: [[equivalent]] #{i + 1} needs exactly exercise, mutant and why")
    return {(r["exercise"], r["mutant"]): r["why"] for r in rows}


def score_unit(unit: str, exercises: list[str] | None = None, max_per_exercise: int | None = None) -> dict:
    """Grade every mutant of the unit's exercises through the fast path; the per-exercise table as data."""
    source = release.build_source_notebook(unit)
    operators = operator_names()
    all_mutants: list[Mutant] = []
    for cell in source.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and (not exercises or meta["grade_id"] in exercises):
            found = mutants_of(meta["grade_id"], cell.source, operators)
            all_mutants += found[:max_per_exercise] if max_per_exercise else found
    variants = [Variant(f"m{i}", m.exercise, m.code) for i, m in enumerate(all_mutants)]
    began = time.monotonic()
    result = run_fast_path(source, variants, release.data_dir(unit), cell_timeout_s=60,
                           budget_s=600 + 120 * len(variants))
    equivalents = load_equivalents(unit)
    rows: dict[str, dict] = {}
    for i, m in enumerate(all_mutants):
        o = result.variants[f"m{i}"]
        row = rows.setdefault(m.exercise, {"mutants": 0, "killed": 0, "equivalent": 0, "survivors": [],
                                           "stale_equivalents": []})
        row["mutants"] += 1
        if o.score == 0:
            row["killed"] += 1
        elif (m.exercise, m.key) in equivalents:
            row["equivalent"] += 1
        else:
            row["survivors"].append(m.key)
    keys = {(m.exercise, m.key) for m in all_mutants}
    for (ex, key) in equivalents:
        if ex in rows and (ex, key) not in keys:
            rows[ex]["stale_equivalents"].append(key)
    for row in rows.values():
        live = row["mutants"] - row["equivalent"]
        row["score"] = round(row["killed"] / live, 3) if live else 1.0
    return {"unit": unit, "seconds": round(time.monotonic() - began, 1), "exercises": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--unit", action="append", help="a unit (folder of solutions/); default: every unit")
    ap.add_argument("--exercise", action="append", help="only these exercises (grade_ids)")
    ap.add_argument("--max-per-exercise", type=int, default=None, help="grade at most N mutants per exercise")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    units = args.unit or release.discover_units()
    reports = [score_unit(u, args.exercise, args.max_per_exercise) for u in units]
    if args.json:
        print(json.dumps({"target": TARGET, "units": reports}, indent=1))
    else:
        print(f"{'unit':20s} {'exercise':16s} {'mutants':>7s} {'killed':>6s} {'equiv':>5s} {'survived':>8s} "
              f"{'score':>6s}")
        for rep in reports:
            for ex, row in rep["exercises"].items():
                flag = "" if row["score"] >= TARGET else "  under target"
                print(f"{rep['unit']:20s} {ex:16s} {row['mutants']:7d} {row['killed']:6d} {row['equivalent']:5d} "
                      f"{len(row['survivors']):8d} {row['score']:6.1%}{flag}")
        for rep in reports:
            for ex, row in rep["exercises"].items():
                for key in row["survivors"]:
                    print(f"survived  {rep['unit']} {ex}: {key}")
                for key in row["stale_equivalents"]:
                    print(f"stale     {rep['unit']} {ex}: mutants.toml lists {key!r}, which is no longer made")
    under = [(r["unit"], ex) for r in reports for ex, row in r["exercises"].items() if row["score"] < TARGET]
    return 1 if under else 0


if __name__ == "__main__":
    raise SystemExit(main())
