"""The GPU figures the notebook shows: a course measurement written by `benchmarks/triton_gpu.py` when one exists
(data/gpu/course-<gpu>-<date>.json), else the anchor figures measured elsewhere on an H200 (data/gpu/h200-*.json,
copied with their provenance, see data/gpu/README.md). Data only: no torch, no GPU needed.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["DATA_DIR", "HEADLINE_KEYS", "TARGETS", "ANCHOR_LABEL", "headline_from_anchors", "with_ratios",
           "load_gpu_figures"]

DATA_DIR = Path(__file__).resolve().parent / "data" / "gpu"
ANCHOR_FILES = ("h200-2026-11-30-triton-vs-vendor.json", "h200-2026-11-30-sdpa-backends-norms.json")
ANCHOR_LABEL = ("measured elsewhere: NVIDIA H200, torch 2.11, triton 3.6, 2026-11-30, plain Triton kernels vs "
                "torch/cuBLAS/cuDNN")
# The flat headline figures, the same keys for the anchors and for a course measurement (None: not measured).
HEADLINE_KEYS = (
    "copy_TBps", "softmax_TBps", "softmax_torch_TBps", "softmax_over_copy", "softmax_over_torch",
    "layernorm_TBps", "layernorm_torch_TBps", "layernorm_inductor_TBps", "layernorm_over_inductor",
    "matmul_4096_TFLOPs", "cublas_4096_TFLOPs", "matmul_4096_over_cublas",
    "matmul_8192_TFLOPs", "cublas_8192_TFLOPs", "matmul_8192_over_cublas",
    "attention_S4096_D64_TFLOPs", "sdpa_S4096_D64_TFLOPs", "attention_S4096_D64_over_sdpa",
    "attention_S16384_D128_TFLOPs", "sdpa_S16384_D128_TFLOPs", "attention_S16384_D128_over_sdpa",
    "attention_S4096_D64_over_sdpa_flash", "attention_S16384_D128_over_sdpa_flash",
)
# Issue 19's targets (ratios): what the kernels should reach on a GPU.
TARGETS = {"softmax_over_copy": 0.95, "matmul_4096_over_cublas": 0.95, "matmul_8192_over_cublas": 0.95,
           "attention_S4096_D64_over_sdpa": 0.9, "attention_S16384_D128_over_sdpa": 0.9,
           "layernorm_over_inductor": 1.0}


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


def headline_from_anchors(vendor: dict, norms: dict) -> dict[str, float | None]:
    """The flat headline figures from the two anchor files (their own key layout)."""
    sm = vendor["softmax_fp32_32768x4096"]
    mm = vendor["matmul_fp16"]
    att = vendor["attention_fp16"]
    small, large = att["B4H16S4096D64"], att["B1H16S16384D128"]
    out: dict[str, float | None] = {
        "copy_TBps": vendor["copy_TBps"], "softmax_TBps": sm["triton_TBps"], "softmax_torch_TBps": sm["torch_TBps"],
        "layernorm_TBps": None, "layernorm_torch_TBps": norms["layernorm_torch_TBps"],
        "layernorm_inductor_TBps": norms["layernorm_inductor_TBps"],
        "matmul_4096_TFLOPs": mm["4096"]["triton_TFLOPs"], "cublas_4096_TFLOPs": mm["4096"]["cublas_TFLOPs"],
        "matmul_8192_TFLOPs": mm["8192"]["triton_TFLOPs"], "cublas_8192_TFLOPs": mm["8192"]["cublas_TFLOPs"],
        "attention_S4096_D64_TFLOPs": small["triton_TFLOPs"], "sdpa_S4096_D64_TFLOPs": small["sdpa_TFLOPs"],
        "attention_S16384_D128_TFLOPs": large["triton_TFLOPs"], "sdpa_S16384_D128_TFLOPs": large["sdpa_TFLOPs"],
    }
    out["attention_S4096_D64_over_sdpa_flash"] = _ratio(small["triton_TFLOPs"],
                                                        norms.get("sdpa_FLASH_ATTENTION_B4H16S4096D64_TFLOPs"))
    out["attention_S16384_D128_over_sdpa_flash"] = _ratio(large["triton_TFLOPs"],
                                                          norms.get("sdpa_FLASH_ATTENTION_B1H16S16384D128_TFLOPs"))
    return with_ratios(out)


def with_ratios(f: dict[str, float | None]) -> dict[str, float | None]:
    """Every headline key (None where missing), the ratio keys filled from the absolute figures unless given."""
    f = {k: f.get(k) for k in HEADLINE_KEYS}
    pairs = {"softmax_over_copy": ("softmax_TBps", "copy_TBps"),
             "softmax_over_torch": ("softmax_TBps", "softmax_torch_TBps"),
             "layernorm_over_inductor": ("layernorm_TBps", "layernorm_inductor_TBps"),
             "matmul_4096_over_cublas": ("matmul_4096_TFLOPs", "cublas_4096_TFLOPs"),
             "matmul_8192_over_cublas": ("matmul_8192_TFLOPs", "cublas_8192_TFLOPs"),
             "attention_S4096_D64_over_sdpa": ("attention_S4096_D64_TFLOPs", "sdpa_S4096_D64_TFLOPs"),
             "attention_S16384_D128_over_sdpa": ("attention_S16384_D128_TFLOPs", "sdpa_S16384_D128_TFLOPs")}
    for key, (a, b) in pairs.items():
        if f[key] is None:
            f[key] = _ratio(f[a], f[b])
    return f


def _course_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("course-*.json"))


def load_gpu_figures(directory: str | Path | None = None) -> dict[str, Any]:
    """The figures to show: {"label", "source" (file names), "gpu", "torch", "triton", "date", "measured_here"
    (a course measurement or not), "figures" (flat HEADLINE_KEYS -> float or None), "targets"}. The newest
    course-*.json (by its "date", then name) wins over the anchors."""
    folder = Path(directory) if directory is not None else DATA_DIR
    course = []
    for path in _course_files(folder):
        data = json.loads(path.read_text())
        if not isinstance(data, dict) or not isinstance(data.get("figures"), dict):
            raise ValueError(f"{path} is not a course GPU measurement (no 'figures' object): rewrite it with "
                             "benchmarks/triton_gpu.py --write or delete it")
        course.append((str(data.get("date", "")), path.name, path, data))
    if course:
        _, _, path, data = max(course, key=lambda c: (c[0], c[1]))
        label = (f"measured for the course: {data.get('gpu', '?')}, torch {data.get('torch', '?')}, triton "
                 f"{data.get('triton', '?')}, {data.get('date', '?')}, the course's Triton kernels vs "
                 "torch/cuBLAS/cuDNN")
        return {"label": label, "source": [path.name], "gpu": data.get("gpu"), "torch": data.get("torch"),
                "triton": data.get("triton"), "date": data.get("date"), "measured_here": True,
                "figures": with_ratios(data["figures"]), "targets": dict(TARGETS)}
    vendor, norms = (json.loads((folder / name).read_text()) for name in ANCHOR_FILES)
    return {"label": ANCHOR_LABEL, "source": list(ANCHOR_FILES), "gpu": vendor["gpu"], "torch": vendor["torch"],
            "triton": vendor["triton"], "date": "2026-11-30", "measured_here": False,
            "figures": headline_from_anchors(vendor, norms), "targets": dict(TARGETS)}
