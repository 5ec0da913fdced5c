"""Run lowered MLIR on the CPU: LLVM IR -> `clang-19 -O2` -> a shared object, called through ctypes.

Why this path: MLIR 19 emits LLVM 19 IR, and clang-19 is the same LLVM, so nothing crosses a version boundary
(llvmlite's LLVM is 22; `tests/test_mlir_execute.py` checks that this IR also parses, verifies and gives the
same numbers there -- with a position-independent target machine: MCJIT with a non-PIC one aborts the process on
the weight globals' 32-bit relocations -- but the course does not depend on it). `mlir-cpu-runner` can only call a `main` with no
arguments and print; a shared object takes numpy arrays in and out, in process, so it can be timed.

Functions carry `llvm.emit_c_interface`: `_mlir_ciface_<name>` takes one pointer per memref argument, each to a
memref descriptor {allocated, aligned, offset, sizes[rank], strides[rank]}. After the pipelines' bufferization
the results are out-params that follow the inputs.

    compiled = compile_module(emit_graph(graph))      # build once
    outputs = compiled({"input": x})                  # call with named feeds, get named outputs
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ..grading import guards
from ..ir.types import TensorType
from .emit import MlirModule
from .pipeline import MODEL_PIPELINE, Lowering, Stage, lower
from .tools import LLVM_ROOT, run_tool

# -O2, not -O3: clang -O3 spends ~8 s on the transformer block's LLVM IR (0.7 s at -O2); both run the loop vectorizer
CLANG_FLAGS = ("-O2", "-march=native", "-shared", "-fPIC", "-Wno-override-module", "-x", "ir")
# memrefCopy (a copy between strided memrefs, e.g. into a padded tensor's interior) lives in MLIR's C runner utils
RUNTIME_LIBS = ("-lm", f"-L{LLVM_ROOT / 'lib'}", "-lmlir_c_runner_utils", f"-Wl,-rpath,{LLVM_ROOT / 'lib'}")
_BUILD = Path(tempfile.mkdtemp(prefix="infopt-mlir-"))


@functools.lru_cache(maxsize=None)
def descriptor_type(rank: int) -> type:
    """The ctypes struct of a rank-`rank` memref descriptor (what MLIR's C interface passes by pointer)."""
    fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p), ("offset", ctypes.c_int64)]
    if rank:
        fields += [("sizes", ctypes.c_int64 * rank), ("strides", ctypes.c_int64 * rank)]
    return type(f"MemRef{rank}D", (ctypes.Structure,), {"_fields_": fields})


def descriptor(array: np.ndarray) -> ctypes.Structure:
    """A memref descriptor viewing `array` (which must stay alive while the descriptor is used)."""
    d = descriptor_type(array.ndim)()
    d.allocated = d.aligned = array.ctypes.data
    d.offset = 0
    if array.ndim:
        d.sizes[:] = list(array.shape)
        d.strides[:] = [s // array.itemsize for s in array.strides]
    return d


def shared_object(llvm_ir: str, flags: Sequence[str] = CLANG_FLAGS) -> ctypes.CDLL:
    """LLVM IR compiled by clang-19 into a shared object and loaded (cached by the IR's hash)."""
    guards.check_native("loading a shared object compiled from LLVM IR")
    key = hashlib.sha256((llvm_ir + "\0".join(flags)).encode()).hexdigest()[:20]
    so = _BUILD / f"m{key}.so"
    if not so.exists():
        src = _BUILD / f"m{key}.ll"
        src.write_text(llvm_ir)
        run_tool("clang", [*flags, str(src), "-o", str(so), *RUNTIME_LIBS])
    return ctypes.CDLL(str(so))


@dataclass
class CompiledFunction:
    """One function of a shared object, called through its C interface with numpy arrays."""

    lib: ctypes.CDLL
    name: str
    arg_types: tuple[TensorType, ...]

    def __post_init__(self) -> None:
        try:
            self._fn = getattr(self.lib, f"_mlir_ciface_{self.name}")
        except AttributeError:
            raise ValueError(f"the shared object has no _mlir_ciface_{self.name}: give the function the "
                             "llvm.emit_c_interface attribute (emit_graph does)") from None
        self._fn.restype = None

    def call(self, *arrays: np.ndarray) -> None:
        """Call with one C-contiguous array per memref argument, inputs then out-params (written in place)."""
        if len(arrays) != len(self.arg_types):
            raise TypeError(f"{self.name} takes {len(self.arg_types)} memrefs, got {len(arrays)}")
        for i, (a, t) in enumerate(zip(arrays, self.arg_types)):
            if not isinstance(a, np.ndarray) or a.shape != t.shape or a.dtype != t.numpy_dtype or \
                    not a.flags.c_contiguous:
                got = f"{a.dtype}{list(a.shape)}" if isinstance(a, np.ndarray) else type(a).__name__
                raise TypeError(f"{self.name}: argument {i} must be a C-contiguous {t.numpy_dtype}{list(t.shape)} "
                                f"array, got {got}")
        descs = [descriptor(a) for a in arrays]
        self._fn(*[ctypes.byref(d) for d in descs])


@dataclass
class CompiledModule:
    """A graph's MLIR module lowered and compiled: call it with named feeds, get named outputs."""

    module: MlirModule
    lowering: Lowering
    function: CompiledFunction
    compile_seconds: float

    def __post_init__(self) -> None:
        self._params = [np.ascontiguousarray(self.module.param_values[n], dtype=t.numpy_dtype)
                        for n, t in self.module.params]

    def __call__(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run on `feeds` ({input name: array}); returns {output name: array}."""
        missing = [n for n, _ in self.module.inputs if n not in feeds]
        if missing:
            raise KeyError(f"no value fed for inputs {missing}; the module takes {[n for n, _ in self.module.inputs]}")
        ins = [np.ascontiguousarray(feeds[n], dtype=t.numpy_dtype) for n, t in self.module.inputs]
        outs = [np.empty(t.shape, t.numpy_dtype) for _, t in self.module.outputs]
        self.function.call(*ins, *self._params, *outs)
        return {n: o for (n, _), o in zip(self.module.outputs, outs)}

    def report(self) -> dict:
        """Compile time per stage and in all (mlir-opt stages + clang), for tables."""
        return {"stages": {r.stage.name: round(r.seconds, 3) for r in self.lowering.results},
                "compile_s": round(self.compile_seconds, 3)}


def compile_module(module: MlirModule, stages: Sequence[Stage] = MODEL_PIPELINE,
                   lowering: Lowering | None = None) -> CompiledModule:
    """Lower `module` through `stages` (ending in LLVM IR) and build it with clang-19; pass `lowering` (that
    module's `lower(...)` result) to build what was already lowered."""
    start = time.perf_counter()
    lowering = lowering if lowering is not None else lower(module.text, tuple(stages))
    if "define " not in lowering.final:
        raise ValueError(f"the last stage ({lowering.names[-1]!r}) did not produce LLVM IR; end the pipeline with "
                         "MODEL_PIPELINE's 'llvm' and 'llvm-ir' stages")
    lib = shared_object(lowering.final)
    fn = CompiledFunction(lib, module.func, tuple(t for _, t in (*module.inputs, *module.params, *module.outputs)))
    return CompiledModule(module, lowering, fn, time.perf_counter() - start)


def compile_function(mlir_text: str, name: str, arg_types: Sequence[TensorType],
                     stages: Sequence[Stage] = MODEL_PIPELINE) -> CompiledFunction:
    """Hand-written MLIR (tensor or memref form) lowered and built; `arg_types` lists its memref arguments after
    bufferization, inputs then out-params."""
    lowering = lower(mlir_text, tuple(stages))
    return CompiledFunction(shared_object(lowering.final), name, tuple(arg_types))
