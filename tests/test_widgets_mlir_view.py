"""infopt.widgets.mlir_view: the stage viewer marks what each stage wrote and follows the dropdown."""
import pytest

from infopt.mlir.emit import emit_graph
from infopt.mlir.matmul import matmul_graph
from infopt.mlir.pipeline import changed_lines, lower
from infopt.widgets.mlir_view import counts_figure, stage_html, stage_viewer


@pytest.fixture(scope="module")
def lowering():
    return lower(emit_graph(matmul_graph(8, 16, 4)).text)


def test_changed_lines_ignore_ssa_names():
    before = "%0 = arith.addf %a, %b : f32\nreturn %0 : f32"
    after = "%7 = arith.addf %x, %y : f32\n%8 = arith.mulf %7, %7 : f32\nreturn %8 : f32"
    assert changed_lines(before, after) == [False, True, False]


def test_the_html_marks_the_new_lines_of_a_stage(lowering):
    page = stage_html(lowering, "loops")
    assert "affine.for" in page and "background:#e6ffed" in page and "lines new" in page
    with pytest.raises(ValueError, match="no stage"):
        stage_html(lowering, "nope")


def test_the_counts_figure_has_a_bar_per_stage_and_names_the_current_one(lowering):
    fig = counts_figure(lowering, "vector")
    assert list(fig.data[0].x) == lowering.names
    assert "vector:" in fig.layout.title.text
    assert {t.name for t in fig.data} >= {"linalg", "affine", "vector", "llvm"}


def test_every_stage_is_visible_and_labelled_with_its_op_count(lowering):
    """A 6-op stage next to a 140-op one: bars are shares of the stage (percent), and the total is written above."""
    from infopt.mlir.pipeline import dialect_counts

    fig = counts_figure(lowering)
    assert fig.layout.barnorm == "percent"
    labels = next(t for t in fig.data if t.type == "scatter").text
    assert list(labels) == [f"{sum(dialect_counts(r.ir).values())} ops" for r in lowering.results]


def test_the_dropdown_drives_the_figure_and_the_ir(lowering):
    box = stage_viewer(lowering)
    pick, plot, out = box.children
    assert pick.options == tuple(lowering.names)
    first = box.figure.layout.title.text
    pick.value = "llvm"
    assert box.figure.layout.title.text != first and "llvm:" in box.figure.layout.title.text
