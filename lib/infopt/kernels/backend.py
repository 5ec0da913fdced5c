"""Triton, imported in the mode this machine can run: its interpreter on CPU tensors, compiled on a CUDA GPU.

Importing this module on a machine without a CUDA GPU sets ``TRITON_INTERPRET=1`` before Triton is imported, so
every ``@triton.jit`` kernel (the library's and the ones a student writes in a notebook cell) runs in Triton's
interpreter on CPU tensors. On a GPU, kernels compile; `interpreted` still gives the interpreter version of any
kernel, which is what grading and `infopt.kernels.trace` use (on CPU tensors, deterministic, inspectable).
"""
from __future__ import annotations

import os
from typing import Any

import torch

_CUDA = torch.cuda.is_available()
if not _CUDA and "TRITON_INTERPRET" not in os.environ:
    os.environ["TRITON_INTERPRET"] = "1"

try:
    import triton
    import triton.language as tl
except ImportError as err:  # pragma: no cover - the course pins triton
    raise ImportError("infopt.kernels needs Triton: pip install triton==3.8.0 (the course's pin)") from err

__all__ = ["triton", "tl", "triton_mode", "interpreted", "runnable", "default_device", "next_power_of_2", "cdiv"]

_INTERPRETED: dict[int, Any] = {}


def triton_mode() -> str:
    """"compiled" when a CUDA GPU is present and TRITON_INTERPRET is not "1", else "interpreter"."""
    return "compiled" if _CUDA and os.environ.get("TRITON_INTERPRET", "0") != "1" else "interpreter"


def default_device() -> torch.device:
    """The device launchers put new tensors on: cuda in compiled mode, else cpu."""
    return torch.device("cuda" if triton_mode() == "compiled" else "cpu")


def _python_function(kernel: Any) -> Any:
    fn = getattr(kernel, "fn", None)
    if fn is None or not callable(fn):
        raise TypeError(f"expected a @triton.jit kernel, got {type(kernel).__name__}: decorate the function with "
                        "@triton.jit")
    while hasattr(fn, "fn") and callable(getattr(fn, "fn")):  # a JITFunction wrapping an InterpretedFunction
        fn = fn.fn
    return fn


class _JitCallsInterpreted:
    """While active, a call of a compiled-mode ``@triton.jit`` function (a helper the kernel calls, or one of
    triton.language's own, such as the combine function of ``tl.sum``) runs it in the interpreter.

    Triton decides at import whether its own helpers are interpreted (``TRITON_INTERPRET``); on a GPU machine they
    are compiled-mode functions, which refuse to be called from an interpreted kernel. Re-entrant."""

    depth = 0
    saved: Any = None

    def __enter__(self) -> None:
        from triton.runtime.jit import JITFunction

        if _JitCallsInterpreted.depth == 0:
            _JitCallsInterpreted.saved = JITFunction.__call__
            JITFunction.__call__ = lambda self, *args, **kwargs: _interpreted_function(self)(*args, **kwargs)
        _JitCallsInterpreted.depth += 1

    def __exit__(self, *exc: object) -> None:
        from triton.runtime.jit import JITFunction

        _JitCallsInterpreted.depth -= 1
        if _JitCallsInterpreted.depth == 0:
            JITFunction.__call__ = _JitCallsInterpreted.saved


def _kernel_class() -> type:
    from triton.runtime.interpreter import InterpretedFunction

    class InterpretedKernel(InterpretedFunction):
        """A kernel run by Triton's interpreter (``k[grid](*args, **meta)``), with every compiled-mode
        ``@triton.jit`` helper it calls interpreted too."""

        def run(self, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
            with _JitCallsInterpreted():
                return super().run(*args, grid=grid, warmup=warmup, **kwargs)

        def rewrite(self) -> Any:
            # Triton copies its interpreter module's globals into the kernel's globals; for a kernel defined in a
            # notebook cell that sets __main__.__file__ to Triton's file, which breaks multiprocessing's spawn.
            namespace = self.fn.__globals__
            before = set(namespace)
            try:
                return super().rewrite()
            finally:
                for key in ("__file__", "__cached__"):
                    if key not in before:
                        namespace.pop(key, None)

        def __repr__(self) -> str:
            return f"InterpretedKernel({self.fn.__name__})"

    return InterpretedKernel


InterpretedKernel = _kernel_class()


def _interpreted_function(kernel: Any) -> Any:
    from triton.runtime.interpreter import InterpretedFunction

    if isinstance(kernel, InterpretedFunction):
        return kernel
    return interpreted(kernel)


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def interpreted(kernel: Any) -> Any:
    """The interpreter version of a ``@triton.jit`` kernel, whatever the mode (an `InterpretedKernel`, cached per
    kernel function): what grading and `infopt.kernels.trace` run, on CPU tensors."""
    if isinstance(kernel, InterpretedKernel):
        return kernel
    fn = _python_function(kernel)
    visible = list(getattr(fn, "__globals__", {}).values()) + [c.cell_contents for c in (fn.__closure__ or ())
                                                                 if _filled(c)]
    if not any(value is tl or value is tl.core for value in visible):
        raise TypeError(f"kernel {getattr(fn, '__name__', fn)!r}: Triton's interpreter needs triton.language "
                        "visible where the kernel is defined: add `import triton.language as tl` to its module "
                        "or notebook")
    key = id(fn)
    if key not in _INTERPRETED or _INTERPRETED[key].fn is not fn:
        _INTERPRETED[key] = InterpretedKernel(fn)
    return _INTERPRETED[key]


def runnable(kernel: Any, *tensors: torch.Tensor) -> Any:
    """`kernel` itself when every tensor is on CUDA and Triton compiles here, else its interpreter version.

    Tensors on different devices are a ValueError (a kernel reads all of them through one address space)."""
    devices = {t.device.type for t in tensors if isinstance(t, torch.Tensor)}
    if len(devices) > 1:
        raise ValueError(f"the tensors are on different devices ({sorted(devices)}): move them to one device first")
    if devices == {"cuda"} and triton_mode() == "compiled":
        return kernel
    if devices - {"cpu"}:
        raise ValueError(f"tensors on {sorted(devices)} cannot run in Triton's interpreter: pass CPU tensors, or "
                         "CUDA tensors on a machine where Triton compiles")
    return interpreted(kernel)


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= n (a block must be a power of two in Triton)."""
    return int(triton.next_power_of_2(int(n)))


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) for positive ints: how many blocks of b cover a."""
    return -(-int(a) // int(b))
