"""The gpu path past `gpu.launch`, with no GPU needed: kernel outlining, the lowering of the kernel to the NVVM
dialect, and the PTX that LLVM's NVPTX back end writes for it (mlir-opt-19's `gpu-module-to-binary`).

    stages = lower_to_ptx(text_with_scf_parallel)       # {"launch", "outlined", "nvvm", "ptx"}: IR text per stage
"""
from __future__ import annotations

import re

from .tools import mlir_opt

TO_LAUNCH = ("--scf-parallel-loop-tiling=parallel-loop-tile-sizes=128", "--gpu-map-parallel-loops",
             "--convert-parallel-loops-to-gpu", "--canonicalize")
KERNEL_TO_NVVM = "gpu.module(lower-affine,convert-scf-to-cf,convert-gpu-to-nvvm,canonicalize,reconcile-unrealized-casts)"


def ptx_of(binary_ir: str) -> str:
    """The PTX text inside the `gpu.binary` op(s) that `gpu-module-to-binary{format=isa}` wrote (escapes undone)."""
    found = re.findall(r'assembly = "((?:[^"\\]|\\.)*)"', binary_ir)
    if not found:
        raise ValueError("no gpu.binary with an assembly string in this IR (was gpu-module-to-binary run?)")
    return "\n".join(re.sub(r"\\([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), text).rstrip("\x00\n")
                     for text in found)


def lower_to_ptx(text: str, chip: str = "sm_90") -> dict[str, str]:
    """A function with an `scf.parallel` loop taken to a GPU kernel, stage by stage: `launch` (the loop tiled and
    mapped to blocks and threads: `gpu.launch`), `outlined` (`gpu-kernel-outlining`: the body becomes a `gpu.func`
    in a `gpu.module`, the host calls `gpu.launch_func`), `nvvm` (the kernel in the llvm and nvvm dialects: thread
    ids are `nvvm.read.ptx.sreg.*`), `ptx` (the PTX for `chip`)."""
    launch = mlir_opt(text, *TO_LAUNCH)
    outlined = mlir_opt(launch, "--gpu-kernel-outlining")
    nvvm = mlir_opt(outlined, f"--pass-pipeline=builtin.module(nvvm-attach-target{{chip={chip}}},{KERNEL_TO_NVVM})")
    binary = mlir_opt(nvvm, "--gpu-module-to-binary=format=isa")
    return {"launch": launch, "outlined": outlined, "nvvm": nvvm, "ptx": ptx_of(binary)}
