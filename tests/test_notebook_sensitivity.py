"""tests/notebooks/sensitivity.py: which arguments are frozen, how, and that a frozen one really stops mattering."""
from __future__ import annotations

import nbformat

from tests.notebooks.sensitivity import NOT_APPLICABLE, frozen_variants


def _notebook(*cells: tuple[str, str | None]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    for source, grade_id in cells:
        cell = nbformat.v4.new_code_cell(source)
        if grade_id:
            cell.metadata["nbgrader"] = {"solution": True, "grade_id": grade_id}
        nb.cells.append(cell)
    return nb


SOURCE = _notebook(
    ("from infopt.accel import AccelConfig\n", None),
    ("def area(w: int, h: int, scale: int = 1) -> int:\n    ### BEGIN SOLUTION\n    return w * h * scale\n"
     "    ### END SOLUTION\n", "area"),
    ("def rows(n: int, config: AccelConfig) -> int:\n    return n * config.rows\n", "rows"),
    ("@triton.jit\ndef k(x_ptr, n, BLOCK: tl.constexpr):\n    pass\n", "kernel"),
    ("class P:\n    def run(self, op, rewriter):\n        return op\n", "pattern"),
)


def test_every_parameter_and_config_field_is_frozen_but_pointers_and_self():
    ids = [f.id for f in frozen_variants(SOURCE)]
    assert ["freeze:area:w", "freeze:area:h", "freeze:area:scale"] == ids[:3]
    assert "freeze:rows:config" in ids and "freeze:rows:config.rows" in ids and "freeze:rows:config.dataflow" in ids
    assert "freeze:kernel:n" in ids and "freeze:kernel:BLOCK" in ids and "freeze:kernel:x_ptr" not in ids
    assert "freeze:pattern:op" in ids and "freeze:pattern:rewriter" in ids and "freeze:pattern:self" not in ids


def _run(code: str) -> dict:
    ns: dict = {}
    exec(code, ns)
    return ns


def test_a_frozen_argument_keeps_its_first_value_or_its_default():
    variants = {f.id: f for f in frozen_variants(SOURCE)}
    w = _run(variants["freeze:area:w"].code)["area"]
    assert (w(2, 3), w(5, 3), w(7, 1, 2)) == (6, 6, 4)          # w stays 2, the first call's
    scale = _run(variants["freeze:area:scale"].code)["area"]
    assert scale(2, 3, 10) == 6                                  # scale stays at its default, 1


def test_a_frozen_config_field_keeps_the_first_value_and_the_rest_follows_the_call():
    from infopt.accel import AccelConfig

    rows = _run({f.id: f for f in frozen_variants(SOURCE)}["freeze:rows:config.rows"].code)["rows"]
    assert rows(2, AccelConfig(4, 4, "ws", "int8")) == 8
    assert rows(2, AccelConfig(8, 4, "os", "int8")) == 8        # rows frozen at 4; the call's config is untouched


def test_an_argument_deepcopy_refuses_is_not_applicable():
    class Live:
        def __deepcopy__(self, memo):
            raise TypeError("a live object")

    op = _run({f.id: f for f in frozen_variants(SOURCE)}["freeze:pattern:rewriter"].code)["P"]()
    try:
        op.run(1, Live())
    except Exception as err:   # noqa: BLE001
        assert NOT_APPLICABLE in str(err)
    else:
        raise AssertionError("a rewriter deepcopy refuses must make the variant say it does not apply")
