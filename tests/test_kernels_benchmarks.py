"""The unit 10 benchmarks run their cheap paths: benchmarks/kernels.py --quick --json prints one object with the
issue's keys (the gloo rows are covered by test_kernels_collectives, so they are skipped here), and
benchmarks/triton_gpu.py without a GPU says it needs one and exits 0; its figures match gpu_figures' keys."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KEYS = ("softmax_reads_over_min", "layernorm_reads_over_min", "attention_reads_over_sd", "ring_allreduce_over_gloo",
        "overlap_speedup", "interp_seconds_max")


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_cpu_benchmark_quick_json_has_the_issue_keys():
    proc = _run("benchmarks/kernels.py", "--quick", "--json", "--no-processes")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert set(KEYS) <= set(result)
    assert result["softmax_reads_over_min"] == 1.0 and result["layernorm_reads_over_min"] == 1.0
    at = result["traffic"]["attention"]
    assert result["attention_reads_over_sd"] == at["formula_over_sd"] == 1 + 2 * at["S"] / at["block_m"]
    assert at["reads_over_min"] == 1.0 and at["o_writes_over_sd"] == 1.0
    assert result["traffic"]["softmax"]["online_x_reads_over_min"] == 2.0
    assert result["ring_allreduce_over_gloo"] is None and result["overlap_speedup"] is None   # --no-processes
    assert len(result["interpreter"]) == 7 and 0 < result["interp_seconds_max"] < 60


def _gpu_script():
    spec = importlib.util.spec_from_file_location("triton_gpu", ROOT / "benchmarks" / "triton_gpu.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_gpu_benchmark_without_a_gpu_says_so_and_exits_0(monkeypatch, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the script would measure")
    mod = _gpu_script()                       # main() in this process: a subprocess would import torch again
    monkeypatch.setattr(sys, "argv", ["triton_gpu.py"])
    assert mod.main() == 0 and "needs a CUDA GPU" in capsys.readouterr().out
    monkeypatch.setattr(sys, "argv", ["triton_gpu.py", "--json", "--write"])
    assert mod.main() == 0 and "needs a CUDA GPU" in json.loads(capsys.readouterr().out)["skipped"]


def test_gpu_benchmark_figures_use_the_headline_keys():
    from infopt.kernels.gpu_figures import HEADLINE_KEYS, with_ratios

    mod = _gpu_script()
    mem = {"TBps": {k: 1.0 + i for i, k in enumerate(("copy", "softmax", "softmax_torch", "layernorm",
                                                         "layernorm_torch", "layernorm_inductor"))}}
    mm = {n: {"triton_TFLOPs": 90.0, "cublas_TFLOPs": 100.0} for n in ("4096", "8192")}
    att = {name: {"triton_TFLOPs": 80.0, "sdpa_TFLOPs": 100.0, "sdpa_flash_TFLOPs": 64.0}
           for name in mod.ATTENTION_CASES}
    flat = mod.figures(mem, mm, att)
    assert set(flat) <= set(HEADLINE_KEYS)
    full = with_ratios(flat)
    assert all(v is not None for v in full.values()), [k for k, v in full.items() if v is None]
    assert full["matmul_8192_over_cublas"] == pytest.approx(0.9)
    assert full["attention_S16384_D128_over_sdpa"] == pytest.approx(0.8)
    assert full["attention_S4096_D64_over_sdpa_flash"] == pytest.approx(1.25)
    assert full["softmax_over_copy"] == pytest.approx(2.0)
