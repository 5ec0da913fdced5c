"""infopt.grading.copies: pasted library code is found whatever its names, docstrings and formatting; honest
solutions are not."""
import textwrap
from pathlib import Path

import pytest

from infopt.grading.copies import MIN_NODES, THRESHOLD, library_index, near_copies, similarity
from tests.grader_fixtures.adversarial import pasted_copy, repo_lib

REPO = Path(__file__).resolve().parent.parent
# Solutions that are near-copies of the library today, with the reason (none since unit 04's schedule computes its
# own tiling under a cycle budget).
KNOWN_COPIES: dict[tuple[str, str], str] = {}

SOURCE = '''
def total_cost(items, rate):
    """Sum of the items' costs at a rate."""
    result = 0.0
    for item in items:
        if item.count > 0 and item.name != "skip":
            result += item.count * item.price * rate
        elif item.count < 0:
            raise ValueError("negative count for " + item.name)
    return {"total": result, "n": len(items), "mean": result / max(len(items), 1)}
'''


def test_names_docstrings_strings_and_formatting_do_not_matter():
    renamed = '''
def f(xs, r):
    acc = 0.0
    for x in xs:
        if (x.count > 0
                and x.name != "other text"):
            acc += x.count * x.price * r
        elif x.count < 0:
            raise ValueError("another message " + x.name)
    return {"a": acc, "b": len(xs), "c": acc / max(len(xs), 1)}
'''
    assert similarity(SOURCE, renamed) == 1.0
    changed = SOURCE.replace("item.count * item.price * rate", "sum(v.count for v in items)").replace(
        "for item in items:", "for item in sorted(items):")
    assert similarity(SOURCE, changed) < 1.0  # a real change shows


def test_a_pasted_library_function_is_found_and_named():
    src = pasted_copy(repo_lib(), "passes/dce.py", "live_nodes")
    assert "live_nodes" not in src and '"""' not in src
    found = near_copies([("dce", "import numpy as np\n\n" + src)])
    assert [(c.cell, c.function, c.library) for c in found] == [("dce", "my_helper", "infopt.passes.dce:live_nodes")]
    assert THRESHOLD <= found[0].similarity <= 1.0
    assert "near-copy of the library's `infopt.passes.dce:live_nodes`" in str(found[0])
    method = textwrap.indent(src, "    ")  # as a method of a student class: found too
    assert near_copies([("dce", "class Mine:\n" + method)])[0].function == "Mine.my_helper"


def test_small_functions_broken_cells_and_magics_are_not_flagged():
    index = library_index()
    assert all(size >= MIN_NODES for _, size, _ in index) and len(index) > 300
    assert near_copies([("tiny", "def f(x):\n    return x + 1\n")]) == []
    assert near_copies([("broken", "def f(:\n")]) == []
    src = pasted_copy(repo_lib(), "passes/dce.py", "live_nodes")
    assert near_copies([("magic", "%timeit 1\n!ls\n" + src)])  # magics are blanked, the rest is read
    assert near_copies([("deep", "x = " + "-" * 100_000 + "1\n")]) == []  # too deep to parse: nothing to judge


@pytest.mark.parametrize("unit", sorted(p.name for p in (REPO / "solutions").iterdir()
                                        if (p / f"{p.name}.py").is_file()))
def test_the_instructors_solutions_are_not_near_copies(unit):
    from autograder.grade import load_unit

    master = load_unit(unit).master
    cells = [(c.grade_id, "\n".join(line for line in c.source.splitlines() if not line.strip().startswith("###")))
             for c in master if c.kind == "solution"]
    found = {(unit, c.cell): c for c in near_copies(cells)}
    assert set(found) == {k for k in KNOWN_COPIES if k[0] == unit}, {k: str(v) for k, v in found.items()}
    best = near_copies(cells, threshold=0.0)
    assert all(c.similarity < 0.78 for c in best if (unit, c.cell) not in KNOWN_COPIES), \
        [str(c) for c in best if c.similarity >= 0.78]
