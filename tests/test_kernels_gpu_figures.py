"""infopt.kernels.gpu_figures: the anchor figures load with their provenance label and the issue's headline ratios,
and a course measurement written by benchmarks/triton_gpu.py takes their place (the newest one)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from infopt.kernels.gpu_figures import ANCHOR_FILES, DATA_DIR, HEADLINE_KEYS, load_gpu_figures


def test_anchor_figures_with_their_label():
    figs = load_gpu_figures()
    if figs["measured_here"]:
        pytest.skip("a course measurement is committed; the anchors are tested on a copy below")
    assert "measured elsewhere: NVIDIA H200, torch 2.11, triton 3.6, 2026-11-30" in figs["label"]
    f = figs["figures"]
    assert set(f) == set(HEADLINE_KEYS)
    assert f["softmax_TBps"] == pytest.approx(4.06, abs=0.01) and f["copy_TBps"] == pytest.approx(4.22, abs=0.01)
    assert f["softmax_over_copy"] == pytest.approx(4.0588 / 4.2225, rel=1e-3)
    assert 0.88 < f["matmul_4096_over_cublas"] < 0.89 and 0.90 < f["matmul_8192_over_cublas"] < 0.91
    assert 0.77 < f["attention_S4096_D64_over_sdpa"] < 0.79 and 0.76 < f["attention_S16384_D128_over_sdpa"] < 0.78
    assert 1.17 < f["attention_S4096_D64_over_sdpa_flash"] < 1.34
    assert f["layernorm_inductor_TBps"] == pytest.approx(4.25, abs=0.01)
    assert f["layernorm_TBps"] is None and f["layernorm_over_inductor"] is None      # not in the anchors
    assert figs["targets"]["softmax_over_copy"] == 0.95


def test_the_anchor_files_are_the_shared_copies():
    for name in ANCHOR_FILES:
        assert json.loads((DATA_DIR / name).read_text())
    assert "H200" in (DATA_DIR / "README.md").read_text()


def test_a_course_measurement_wins_and_the_newest_one(tmp_path):
    for name in ANCHOR_FILES:
        shutil.copy(DATA_DIR / name, tmp_path / name)
    assert not load_gpu_figures(tmp_path)["measured_here"]
    old = {"gpu": "NVIDIA A100", "torch": "2.13.0", "triton": "3.8.0", "date": "2026-12-01",
           "figures": {"softmax_TBps": 1.5, "copy_TBps": 1.6}}
    new = dict(old, gpu="NVIDIA H100", date="2026-12-02", figures={"matmul_4096_TFLOPs": 500.0,
                                                                  "cublas_4096_TFLOPs": 520.0})
    (tmp_path / "course-a100-2026-12-01.json").write_text(json.dumps(old))
    (tmp_path / "course-h100-2026-12-02.json").write_text(json.dumps(new))
    figs = load_gpu_figures(tmp_path)
    assert figs["measured_here"] and figs["gpu"] == "NVIDIA H100" and figs["source"] == ["course-h100-2026-12-02.json"]
    assert "NVIDIA H100, torch 2.13.0, triton 3.8.0, 2026-12-02" in figs["label"]
    assert figs["figures"]["matmul_4096_over_cublas"] == pytest.approx(500 / 520)
    assert figs["figures"]["softmax_TBps"] is None
    (tmp_path / "course-broken.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a course GPU measurement"):
        load_gpu_figures(tmp_path)


def test_import_needs_no_torch():
    code = "import sys, infopt.kernels.gpu_figures as g; g.load_gpu_figures(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
