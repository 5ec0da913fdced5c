"""The serving views: the block-table replay draws each step's tables (owners, sharing, fill) and its slider moves
the figure; the batching explorer's sliders and menu redraw the throughput/latency curve."""
from __future__ import annotations

import pytest
import torch

from infopt.llm.engine import ContinuousEngine, parallel_sampling_log
from infopt.llm.run_stats import CostModel
from infopt.llm.model import TARGET_CONFIG, TinyLlama
from infopt.llm.traces import poisson_trace
from infopt.widgets.llm_view import batching_explorer, block_table_figure, block_table_view, point_labels

TEXT = "for i in range(10):\n    print(i * i)\n" * 50
COST = CostModel(decode_step_s=5e-3, decode_seq_s=5e-4, prefill_call_s=2e-3, prefill_token_s=1e-4)


@pytest.fixture(scope="module")
def crowded_run():
    tr = poisson_trace(8, float("inf"), seed=5, prompt_len=(3, 8), output_len=(8, 14), text=TEXT)
    return ContinuousEngine(None, num_blocks=7, block_size=4, max_batch=8, cost=COST).run(tr)


def _cells(fig):
    """(block, label) of every drawn cell that holds a sequence."""
    text = fig.data[0].text
    return {r * len(row) + c: v for r, row in enumerate(text) for c, v in enumerate(row) if v}


def test_block_table_figure_draws_each_sequences_blocks(crowded_run):
    for step in (0, len(crowded_run.steps) // 2):
        st = crowded_run.steps[step]
        cells = _cells(block_table_figure(crowded_run, step, cols=4))
        expected = {b for t in st.tables.values() for b in t}
        assert set(cells) == expected
        hover = {r * len(row) + c: v for r, row in enumerate(block_table_figure(crowded_run, step, cols=4).data[0]
                                                           .hovertext) for c, v in enumerate(row)}
        for sid, table in st.tables.items():
            assert all(f"seq {sid}" in hover[b] for b in table)
            owners = {b: sum(b in t for t in st.tables.values()) for b in table}
            assert all(cells[b].startswith(f"s{sid}<br>") for b in table if owners[b] == 1)
    with pytest.raises(ValueError, match="step"):
        block_table_figure(crowded_run, len(crowded_run.steps))


def test_block_table_view_slider_redraws_and_shows_preemption(crowded_run):
    box = block_table_view(crowded_run, cols=4)
    k = next(i for i, s in enumerate(crowded_run.steps) if s.preempted)
    before = box.figure.layout.title.text
    box.slider.value = k
    assert box.figure.layout.title.text != before and "preempted" in box.figure.layout.title.text
    assert set(_cells(box.figure)) == {b for t in crowded_run.steps[k].tables.values() for b in t}


def test_sharing_is_drawn_dark_with_every_owner():
    torch.manual_seed(0)
    model = TinyLlama(TARGET_CONFIG).eval()
    st = parallel_sampling_log(model, list(b"x = 1 + 2\ny"), n=3, max_new_tokens=3, block_size=4)
    fig = block_table_figure(st, 1, cols=8)      # after the fork: 3 prompt blocks, each held by s0, s1, s2
    z = fig.data[0].z
    shared = [b for b, v in enumerate(z[0]) if v == 11]
    hover = fig.data[0].hovertext[0]
    # the cell names the first owner and how many more (a sixteenth of the figure is too narrow for the list);
    # the hover lists every owner
    assert shared == [0, 1, 2] and all(_cells(fig)[b].startswith("s0+2<br>") for b in shared)
    assert all("shared by seq 0, seq 1, seq 2" in hover[b] for b in shared)
    assert st.extra["copy_on_write_copies"] == 2    # 11 tokens: the shared last block is copied by 2 of the 3


def test_batching_explorer_controls_redraw_the_curve():
    box = batching_explorer(COST, batch_limits=(1, 4, 16), rates=(10.0, 40.0), n=16, text=TEXT)
    fig, ctl = box.figure, box.controls
    assert len(fig.data) == 2 and len(fig.data[0].x) == 3
    t0 = fig.layout.title.text
    ctl["batch"].value = 16
    t1 = fig.layout.title.text
    assert t1 != t0 and "max_batch 16" in t1
    ys = list(fig.data[0].y)
    ctl["rate"].value = 10.0 if ctl["rate"].value != 10.0 else 40.0
    assert list(fig.data[0].y) != ys
    ctl["measure"].value = "tpot_p99"
    assert "time per output token" in fig.layout.xaxis.title.text


def test_points_that_coincide_share_one_label():
    """A batch limit the arrivals never fill serves exactly as the next smaller one: one label, "16 = 64"."""
    rows = [{"max_batch": b, "ttft_p99": x, "throughput_tok_s": y}
            for b, x, y in ((1, 2.0, 100.0), (4, 1.0, 300.0), (16, 0.5, 400.0), (64, 0.5, 400.0), (128, 0.51, 401.0))]
    assert point_labels(rows, "ttft_p99") == ["1", "4", "16 = 64 = 128", "", ""]
    apart = [dict(r, throughput_tok_s=100.0 * i) for i, r in enumerate(rows)]
    assert point_labels(apart, "ttft_p99") == ["1", "4", "16", "64", "128"]
