"""Unit 10's GPU benchmark: the library's Triton kernels, compiled, against the vendor paths on one CUDA GPU, timed
with triton.testing.do_bench (median ms), side by side in one process.

Figures (issue 19; targets in infopt.kernels.gpu_figures.TARGETS):
- row softmax fp32 32768 x 4096: TB/s (read x + write out) vs a plain copy of the same bytes and vs torch.softmax
  (target >= 0.95x copy);
- layernorm fp32 32768 x 4096: TB/s vs torch's layer_norm and torch.compile's (Inductor) (target >= Inductor);
- fp16 matmul 4096^3 and 8192^3: TFLOP/s vs torch.matmul (cuBLAS) (target >= 0.95x);
- fp16 attention forward B4 H16 S4096 D64 and B1 H16 S16384 D128: TFLOP/s vs scaled_dot_product_attention with its
  default backend (target >= 0.9x), and vs its FLASH backend.

    python benchmarks/triton_gpu.py [--json] [--write]

--write saves lib/infopt/kernels/data/gpu/course-<gpu>-<date>.json (GPU name, torch and triton versions, date, the
flat figures and the details), which the notebook then shows instead of the anchor figures. Without a CUDA GPU the
script says so and exits 0.
"""
from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
from pathlib import Path

NEEDS_GPU = "benchmarks/triton_gpu.py needs a CUDA GPU (torch.cuda.is_available() is False here); nothing measured"


def _bench(fn) -> float:
    """Median seconds of fn() by triton.testing.do_bench."""
    import triton.testing

    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e-3


def _relerr(got, want) -> float:
    return float((got.float() - want.float()).norm() / want.float().norm())


def bench_memory_bound() -> dict:
    """Softmax and layernorm TB/s beside a copy of the same bytes, torch and Inductor."""
    import torch
    import torch.nn.functional as F

    from infopt.kernels.norms import layer_norm
    from infopt.kernels.softmax import softmax

    rows, cols = 32768, 4096
    x = torch.randn(rows, cols, device="cuda")
    w, b = torch.randn(cols, device="cuda"), torch.randn(cols, device="cuda")
    y = torch.empty_like(x)
    moved = 2 * x.numel() * x.element_size()           # read x once, write out once
    tbps = {"copy": moved / _bench(lambda: y.copy_(x)) / 1e12}
    tbps["softmax"] = moved / _bench(lambda: softmax(x)) / 1e12
    tbps["softmax_torch"] = moved / _bench(lambda: torch.softmax(x, dim=-1)) / 1e12
    tbps["layernorm"] = moved / _bench(lambda: layer_norm(x, w, b)) / 1e12
    tbps["layernorm_torch"] = moved / _bench(lambda: F.layer_norm(x, (cols,), w, b)) / 1e12
    compiled = torch.compile(lambda t: F.layer_norm(t, (cols,), w, b))
    compiled(x)
    tbps["layernorm_inductor"] = moved / _bench(lambda: compiled(x)) / 1e12
    err = {"softmax_relerr": _relerr(softmax(x), torch.softmax(x, dim=-1)),
           "layernorm_relerr": _relerr(layer_norm(x, w, b), F.layer_norm(x, (cols,), w, b))}
    return {"shape": [rows, cols], "dtype": "float32", "TBps": tbps, **err}


def bench_matmul() -> dict:
    """fp16 matmul TFLOP/s, the library's grouped kernel (its compiled default blocks) vs cuBLAS."""
    import torch

    from infopt.kernels.matmul import matmul

    out = {}
    for n in (4096, 8192):
        a, b = (torch.randn(n, n, device="cuda", dtype=torch.float16) for _ in range(2))
        flops = 2 * n ** 3
        out[str(n)] = {"triton_TFLOPs": flops / _bench(lambda: matmul(a, b)) / 1e12,
                       "cublas_TFLOPs": flops / _bench(lambda: torch.matmul(a, b)) / 1e12,
                       "relerr": _relerr(matmul(a, b), torch.matmul(a, b))}
    return out


ATTENTION_CASES = {"S4096_D64": ((4, 16, 4096, 64), (128, 64, 4, 3)),
                   "S16384_D128": ((1, 16, 16384, 128), (128, 128, 8, 3))}   # shape, (BLOCK_M, BLOCK_N, warps, stages)


def bench_attention() -> dict:
    """fp16 attention forward TFLOP/s (4 B H S^2 D): the library's flash kernel vs SDPA (default and FLASH)."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from infopt.kernels.attention import flash_attention_kernel, flash_attention_launch

    out = {}
    for name, ((bsz, h, s, d), (bm, bn, warps, stages)) in ATTENTION_CASES.items():
        q, k, v = (torch.randn(bsz, h, s, d, device="cuda", dtype=torch.float16) for _ in range(3))
        o = torch.empty_like(q)
        grid, args, meta = flash_attention_launch(q, k, v, o, causal=False, block_m=bm, block_n=bn)

        def ours() -> None:
            flash_attention_kernel[grid](*args, **meta, num_warps=warps, num_stages=stages)

        flops = 4 * bsz * h * s * s * d
        res = {"triton_TFLOPs": flops / _bench(ours) / 1e12,
               "sdpa_TFLOPs": flops / _bench(lambda: F.scaled_dot_product_attention(q, k, v)) / 1e12,
               "cfg": [bm, bn, warps, stages]}
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            res["sdpa_flash_TFLOPs"] = flops / _bench(lambda: F.scaled_dot_product_attention(q, k, v)) / 1e12
        ours()
        res["relerr"] = _relerr(o, F.scaled_dot_product_attention(q, k, v))
        out[name] = res
    return out


def figures(mem: dict, mm: dict, att: dict) -> dict:
    """The flat headline figures (the keys of infopt.kernels.gpu_figures.HEADLINE_KEYS)."""
    t = mem["TBps"]
    f = {"copy_TBps": t["copy"], "softmax_TBps": t["softmax"], "softmax_torch_TBps": t["softmax_torch"],
         "layernorm_TBps": t["layernorm"], "layernorm_torch_TBps": t["layernorm_torch"],
         "layernorm_inductor_TBps": t["layernorm_inductor"]}
    for n in ("4096", "8192"):
        f[f"matmul_{n}_TFLOPs"], f[f"cublas_{n}_TFLOPs"] = mm[n]["triton_TFLOPs"], mm[n]["cublas_TFLOPs"]
    for name, r in att.items():
        f[f"attention_{name}_TFLOPs"], f[f"sdpa_{name}_TFLOPs"] = r["triton_TFLOPs"], r["sdpa_TFLOPs"]
        f[f"attention_{name}_over_sdpa_flash"] = r["triton_TFLOPs"] / r["sdpa_flash_TFLOPs"]
    return f


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object and nothing else")
    ap.add_argument("--write", action="store_true", help="save the figures as the course's GPU data file")
    args = ap.parse_args()

    import torch

    if not torch.cuda.is_available():
        print(json.dumps({"skipped": NEEDS_GPU}) if args.json else NEEDS_GPU)
        return 0
    import triton

    from infopt.kernels.backend import triton_mode
    from infopt.kernels.gpu_figures import DATA_DIR, TARGETS, with_ratios

    if triton_mode() != "compiled":
        print("TRITON_INTERPRET=1 is set: unset it to compile the kernels on the GPU", file=sys.stderr)
        return 1
    mem, mm, att = bench_memory_bound(), bench_matmul(), bench_attention()
    gpu = torch.cuda.get_device_name()
    result = {"gpu": gpu, "torch": torch.__version__, "triton": triton.__version__,
              "date": datetime.date.today().isoformat(), "figures": with_ratios(figures(mem, mm, att)),
              "targets": TARGETS, "details": {"memory_bound": mem, "matmul_fp16": mm, "attention_fp16": att}}
    if args.write:
        slug = re.sub(r"[^a-z0-9]+", "-", gpu.lower()).strip("-")
        path = Path(DATA_DIR) / f"course-{slug}-{result['date']}.json"
        path.write_text(json.dumps(result, indent=1) + "\n")
        result["written"] = str(path)
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"unit 10 GPU benchmark: {gpu}, torch {result['torch']}, triton {result['triton']}, {result['date']}")
    for key, value in result["figures"].items():
        target = TARGETS.get(key)
        verdict = "" if target is None or value is None else ("met" if value >= target else "NOT met")
        shown = "-" if value is None else f"{value:.4g}"
        print(f"{key:<40} {shown:>10}  {'' if target is None else '>= ' + str(target):<8} {verdict}")
    if args.write:
        print(f"written: {result['written']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
