"""IREE, a production MLIR compiler, end to end on CPU: ONNX -> `iree-import-onnx` -> `iree-compile` for `llvm-cpu`
-> `iree.runtime`, plus the compilation phases it can dump, to see where the stages we ran with mlir-opt live.

    mlir = import_onnx(model_proto)                         # torch-dialect MLIR text
    compiled = compile_for_cpu(mlir, input_type="onnx")     # IreeModule: call it with numpy arrays
    compiled = compile_for_cpu(mlir, "main_graph", "onnx", phases=True)
    compiled.phases                                         # [(number, name, text)] of the 12 phases

iree is imported inside the functions (the pinned iree-base-compiler / iree-base-runtime); its tools are the venv's
`iree-import-onnx` and the in-process compiler API.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

CPU_FLAGS = ("--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
             "--iree-llvmcpu-target-cpu=host")
PHASES = ("input", "abi", "preprocessing", "global-optimization", "dispatch-creation", "flow", "stream",
          "executable-sources", "executable-configurations", "executable-targets", "hal", "vm")


class IreeError(RuntimeError):
    """IREE's importer or compiler failed; the message carries its diagnostics."""


def _require() -> None:
    try:
        import iree.compiler  # noqa: F401
        import iree.runtime  # noqa: F401
    except ImportError as err:  # pragma: no cover - pinned in pyproject.toml
        raise ImportError("IREE is not installed: `pip install iree-base-compiler==3.13.0 "
                          "iree-base-runtime==3.13.0` (or `make setup`)") from err


def _tool(name: str) -> str:
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    if not found:
        raise IreeError(f"{name} not found next to {sys.executable} or on PATH: install iree-base-compiler==3.13.0")
    return found


def import_onnx(model: Any) -> str:
    """An ONNX model (a ModelProto or a path) as the MLIR text `iree-import-onnx` makes of it (torch dialect)."""
    _require()
    with tempfile.TemporaryDirectory(prefix="iree-") as d:
        path = Path(d) / "model.onnx"
        if isinstance(model, (str, Path)):
            shutil.copy(model, path)
        else:
            path.write_bytes(model.SerializeToString())
        out = Path(d) / "model.mlir"
        proc = subprocess.run([_tool("iree-import-onnx"), str(path), "-o", str(out)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise IreeError(f"iree-import-onnx failed:\n{proc.stderr[-3000:]}")
        return out.read_text()


def compile_vmfb(mlir: str, input_type: str = "auto", flags: Sequence[str] = ()) -> bytes:
    """MLIR text compiled by IREE for the local CPU (llvm-cpu, host features): the VM flatbuffer."""
    _require()
    from iree.compiler import tools

    try:
        return tools.compile_str(mlir, input_type=input_type, extra_args=[*CPU_FLAGS, *flags])
    except tools.CompilerToolError as err:
        raise IreeError(f"iree-compile failed:\n{str(err)[-4000:]}") from None


@dataclass
class IreeModule:
    """A compiled IREE module loaded into a single-threaded (local-sync) runtime; call `fn` with numpy arrays."""

    vmfb: bytes
    function: str
    compile_seconds: float
    phases: list = field(default_factory=list)

    def __post_init__(self) -> None:
        import iree.runtime as rt

        self._config = rt.Config("local-sync")          # one thread: the device runs dispatches inline
        self._ctx = rt.SystemContext(config=self._config)
        vm = rt.VmModule.copy_buffer(self._ctx.instance, self.vmfb)
        if self.function not in vm.function_names:
            raise IreeError(f"no function {self.function!r} in the compiled module (it has {vm.function_names})")
        self._ctx.add_vm_module(vm)
        self._fn = self._ctx.modules[vm.name][self.function]

    def __call__(self, *arrays: np.ndarray) -> list[np.ndarray]:
        """Run with numpy inputs; returns the results as numpy arrays."""
        out = self._fn(*[np.ascontiguousarray(a) for a in arrays])
        outs = out if isinstance(out, (list, tuple)) else [out]
        return [np.asarray(o.to_host()) if hasattr(o, "to_host") else np.asarray(o) for o in outs]


def compile_for_cpu(mlir: str, function: str = "main_graph", input_type: str = "auto",
                    flags: Sequence[str] = (), phases: bool = False) -> IreeModule:
    """Compile MLIR text for llvm-cpu and load it (the compile time is kept). With `phases`, the same compile also
    dumps its compilation phases (`--dump-compilation-phases-to`) into `.phases`: [(number, phase, IR text)]."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="iree-phases-") as d:
        vmfb = compile_vmfb(mlir, input_type, [*flags, *([f"--dump-compilation-phases-to={d}"] if phases else [])])
        dumped = []
        for p in Path(d).glob("*.mlir"):
            m = re.match(r".*?\.(\d+)\.([\w-]+)\.mlir$", p.name)
            if m:
                dumped.append((int(m.group(1)), m.group(2), p.read_text()))
    module = IreeModule(vmfb, function, time.perf_counter() - start)
    module.phases = sorted(dumped)
    return module


def iree_against_onnxruntime(iree_module: IreeModule, ort: Any, x: np.ndarray, repeats: int = 21) -> dict[str, float]:
    """IREE and onnxruntime on the same input, timed as a pair and nothing else (round-robin, after a warm-up):
    each one's median seconds per call and the paired median of IREE's time over onnxruntime's. Unit 04's cell
    and `benchmarks/mlir.py` both measure with this, so the shipped ratio and the live one are the same quantity."""
    from ..runtime import interleaved, paired_ratio

    name = ort.get_inputs()[0].name
    samples = interleaved({"iree": lambda: iree_module(x), "onnxruntime": lambda: ort.run(None, {name: x})},
                          repeats=repeats)
    return {"iree_s": float(np.median(samples["iree"])), "onnxruntime_s": float(np.median(samples["onnxruntime"])),
            "iree_time_over_ort_time": paired_ratio(samples, "iree", "onnxruntime")}


_ALIAS = re.compile(r"^#([\w.$-]+) = (.*)$", re.M)
_CONFIG = re.compile(r"lowering_config<([^>]*)>")
_PIPELINE = re.compile(r"#iree_cpu\.pipeline<(\w+)>")


def expand_aliases(ir: str) -> str:
    """MLIR text with its attribute aliases (`#config3 = ...` at the top) written out where they are used."""
    aliases = dict(_ALIAS.findall(ir))
    body = _ALIAS.sub("", ir)
    if not aliases:
        return body
    pattern = re.compile(r"#(" + "|".join(re.escape(k) for k in sorted(aliases, key=len, reverse=True)) + r")\b")
    return pattern.sub(lambda m: aliases[m.group(1)], body)


def dispatch_configs(configurations_ir: str) -> list[dict[str, str]]:
    """Per dispatch of the `executable-configurations` phase: its name, codegen pipeline and the tile sizes of its
    root op (lowering_config)."""
    text = expand_aliases(configurations_ir)
    out = []
    for chunk in text.split("hal.executable.export")[1:]:
        name = re.search(r"@(\S+)", chunk)
        pipe = _PIPELINE.search(chunk)
        cfgs = _CONFIG.findall(chunk)
        out.append({"dispatch": name.group(1) if name else "?", "pipeline": pipe.group(1) if pipe else "?",
                    "tiles": cfgs[-1] if cfgs else ""})
    return out
