"""infopt.kernels.backend: Triton in interpreter mode on a CPU machine, interpreter versions of kernels, helpers."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from infopt.kernels import backend
from infopt.kernels.backend import cdiv, default_device, interpreted, next_power_of_2, runnable, tl, triton


@triton.jit
def twice_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, 2 * tl.load(x_ptr + offs, mask=mask), mask=mask)


def test_importing_the_package_imports_no_torch_or_triton():
    code = "import sys, infopt.kernels; print(sorted(m for m in ('torch', 'triton', 'jax') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-machine mode")
def test_a_cpu_machine_runs_the_interpreter():
    assert os.environ.get("TRITON_INTERPRET") == "1"
    assert backend.triton_mode() == "interpreter" and default_device() == torch.device("cpu")


def test_interpreted_gives_a_cached_interpreter_function_that_runs():
    from triton.runtime.interpreter import InterpretedFunction

    fn = interpreted(twice_kernel)
    assert isinstance(fn, InterpretedFunction) and interpreted(twice_kernel) is fn and interpreted(fn) is fn
    x = torch.arange(10, dtype=torch.float32)
    out = torch.empty_like(x)
    runnable(twice_kernel, x, out)[(cdiv(10, 8),)](x, out, 10, BLOCK=8)
    assert torch.equal(out, 2 * x)


def test_runnable_refuses_mixed_or_unrunnable_devices():
    with pytest.raises(ValueError, match="different devices"):
        runnable(twice_kernel, torch.ones(2), torch.empty(2, device="meta"))
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="cannot run in Triton's interpreter"):
            runnable(twice_kernel, torch.empty(2, device="meta"))


def test_interpreted_rejects_a_plain_function():
    with pytest.raises(TypeError, match="@triton.jit"):
        interpreted(lambda x: x)


def test_a_kernel_whose_module_lacks_triton_language_gets_a_clear_error():
    namespace = {"triton": triton}   # a module that imported triton but not triton.language
    exec(compile("def k(x_ptr):\n    pass\n", "<no-tl>", "exec"), namespace)

    class FakeJit:   # what interpreted() reads of a JITFunction: its Python function
        fn = staticmethod(namespace["k"])

    with pytest.raises(TypeError, match="add `import triton.language as tl`"):
        interpreted(FakeJit())


def test_size_helpers():
    assert [next_power_of_2(n) for n in (1, 2, 3, 100, 128)] == [1, 2, 4, 128, 128]
    assert [cdiv(a, b) for a, b in ((1, 4), (4, 4), (5, 4), (100, 32))] == [1, 1, 2, 4]
