"""Every tool the course uses is installed at the version it was tried with, and really runs.

Python packages: each pin in pyproject.toml (main dependencies and the `test` extra) against the installed
distribution. System packages: each line of tools/system-packages.txt (what `make setup` installs with apt) by the
command or file that proves it and, where pinned, the version its `--version` prints. Then a smoke run of each
compiler the units drive (xDSL, IREE, Triton's interpreter, MLIR 19, transformers, jax), each in a fresh
interpreter so one tool's environment cannot leak into another's. A drift or a missing tool fails with its name.
"""
from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.xdist_group("toolchain")


def _pins() -> list[tuple[str, str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = [*project["dependencies"], *project.get("optional-dependencies", {}).get("test", [])]
    return [tuple(p.split("==")) for p in pins]


def _system_packages() -> list[tuple[str, str, str]]:
    rows = []
    for line in (ROOT / "tools" / "system-packages.txt").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            pkg, probe, version = line.split()[:3]
            rows.append((pkg, probe, version))
    return rows


@pytest.mark.parametrize("name,version", _pins(), ids=[n for n, _ in _pins()])
def test_python_package_is_installed_at_its_pin(name, version):
    try:
        have = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        pytest.fail(f"{name} is not installed (pyproject pins {name}=={version}); run `make setup` "
                    "(or `bash tools/setup.sh --test` for the test extra)")
    have_base = have.split("+")[0]  # torch's CPU wheel is 2.13.0+cpu
    assert have_base == version, (f"{name} drifted: {have} is installed but pyproject.toml pins {version}; "
                                  "reinstall with `make setup` or update the pin after trying the new version")


@pytest.mark.parametrize("pkg,probe,version", _system_packages(), ids=[p for p, _, _ in _system_packages()])
def test_system_package_is_installed_at_its_version(pkg, probe, version):
    found = Path(probe).exists() if probe.startswith("/") else shutil.which(probe) is not None
    if not found:
        hint = f"install it with `sudo apt-get install -y {pkg}` (`make setup` does it as root)"
        if os.geteuid() != 0:
            pytest.skip(f"{pkg} is missing ({probe} not found) and this is not root: {hint}")
        pytest.fail(f"{pkg} is missing: {probe} not found; {hint}")
    if version == "-":
        return
    out = subprocess.run([probe, "--version"], capture_output=True, text=True, timeout=60)
    text = out.stdout + out.stderr
    assert version in text, f"{pkg} drifted: `{probe} --version` says {text.strip()[:200]!r}, expected {version}"


def _run(code: str, env: dict | None = None, timeout: float = 180) -> str:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, cwd=ROOT)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def test_xdsl_parses_verifies_and_prints_a_linalg_matmul():
    out = _run("""
from xdsl.context import Context
from xdsl.parser import Parser
from xdsl.dialects import get_all_dialects
ctx = Context()
for name, factory in get_all_dialects().items():
    ctx.register_dialect(name, factory)
text = '''func.func @mm(%a: memref<4x8xf32>, %b: memref<8x2xf32>, %c: memref<4x2xf32>) {
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x2xf32>) outs(%c : memref<4x2xf32>)
  func.return
}'''
module = Parser(ctx, text).parse_module()
module.verify()
print(module)
""")
    assert "linalg.matmul" in out


def test_iree_compiles_and_runs_a_matmul_on_the_cpu():
    out = _run("""
import numpy as np
import iree.compiler as ireec
import iree.runtime as ireert
text = '''func.func @mm(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) -> tensor<4x2xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x2xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %r = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x2xf32>) outs(%f : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}'''
vmfb = ireec.compile_str(text, target_backends=["llvm-cpu"], extra_args=["--iree-llvmcpu-target-cpu=host"])
config = ireert.Config("local-task")
ctx = ireert.SystemContext(config=config)
ctx.add_vm_module(ireert.VmModule.copy_buffer(ctx.instance, vmfb))
a = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
b = np.random.default_rng(1).standard_normal((8, 2)).astype(np.float32)
got = np.asarray(ctx.modules.module["mm"](a, b))
print(float(np.abs(got - a @ b).max()))
""")
    assert float(out.split()[-1]) < 1e-5


def test_triton_interpreter_runs_a_masked_kernel_on_the_cpu():
    out = _run("""
import torch, triton, triton.language as tl
@triton.jit
def add(x, y, o, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(o + i, tl.load(x + i, mask=m) + tl.load(y + i, mask=m), mask=m)
x, y = torch.randn(1000), torch.randn(1000)
o = torch.empty(1000)
add[(triton.cdiv(1000, 128),)](x, y, o, 1000, BLOCK=128)
print(bool(torch.equal(o, x + y)))
""", env={"TRITON_INTERPRET": "1"})
    assert out.split()[-1] == "True"


def test_mlir_19_lowers_a_matmul_to_llvm_ir():
    if shutil.which("mlir-opt-19") is None:
        pytest.skip("mlir-19-tools is missing (see test_system_package_is_installed_at_its_version)")
    text = """func.func @mm(%a: memref<4x8xf32>, %b: memref<8x2xf32>, %c: memref<4x2xf32>) {
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x2xf32>) outs(%c : memref<4x2xf32>)
  return
}"""
    lowered = subprocess.run(
        ["mlir-opt-19", "--convert-linalg-to-loops", "--convert-scf-to-cf", "--expand-strided-metadata",
         "--lower-affine", "--finalize-memref-to-llvm", "--convert-arith-to-llvm", "--convert-cf-to-llvm",
         "--convert-func-to-llvm", "--reconcile-unrealized-casts"],
        input=text, capture_output=True, text=True, timeout=60)
    assert lowered.returncode == 0, lowered.stderr
    llvm_ir = subprocess.run(["mlir-translate-19", "--mlir-to-llvmir"], input=lowered.stdout,
                             capture_output=True, text=True, timeout=60)
    assert llvm_ir.returncode == 0, llvm_ir.stderr
    assert "define void @mm" in llvm_ir.stdout and "fmul" in llvm_ir.stdout


def test_transformers_builds_a_tiny_llama_offline():
    out = _run("""
import torch
from transformers import LlamaConfig, LlamaForCausalLM
torch.manual_seed(0)
cfg = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                  num_attention_heads=4, num_key_value_heads=2)
logits = LlamaForCausalLM(cfg).eval()(torch.tensor([[1, 2, 3]])).logits
print(tuple(logits.shape))
""", env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    assert out.strip().endswith("(1, 3, 64)")


def test_jax_jits_and_lowers_to_stablehlo():
    out = _run("""
import jax, jax.numpy as jnp
f = jax.jit(lambda x: jnp.tanh(x) * 2)
print("stablehlo" in f.lower(jnp.ones(3)).as_text(), float(f(jnp.zeros(3)).sum()))
""", env={"JAX_PLATFORMS": "cpu"})
    assert out.split() == ["True", "0.0"]
