"""LLVM through llvmlite: parse and verify IR, optimize with the new pass manager, JIT for the host, emit asm/PTX.

``llvmlite.binding.initialize()`` is deprecated in llvmlite 0.50 (it raises): LLVM initializes
itself; only the native target, its asm printer, and (for PTX) all targets need initializing.
Optimization is either a level (``opt=0..3``, LLVM's default per-module pipeline, with loop and SLP
vectorization switchable) or a named list of passes (``passes=["sroa", "instcombine", ...]``, see
``PASSES``). llvmlite 0.50 exposes no standalone mem2reg or loop-vectorize pass: ``"mem2reg"``
runs SROA, which does mem2reg's promotion of stack slots to SSA values (and more); the loop
vectorizer runs only inside the level pipelines (``opt>=2``, ``loop_vectorize=True``).
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Sequence

from ..grading import guards

PASSES: dict[str, str] = {
    "mem2reg": "add_sroa_pass", "sroa": "add_sroa_pass", "instcombine": "add_instruction_combine_pass",
    "aggressive-instcombine": "add_aggressive_instcombine_pass", "simplifycfg": "add_simplify_cfg_pass",
    "loop-unroll": "add_loop_unroll_pass", "loop-rotate": "add_loop_rotate_pass",
    "loop-simplify": "add_loop_simplify_pass", "lcssa": "add_lcssa_pass", "dse": "add_dead_store_elimination_pass",
    "dce": "add_dead_code_elimination_pass", "adce": "add_aggressive_dce_pass", "gvn": "add_new_gvn_pass",
    "sccp": "add_sccp_pass", "reassociate": "add_reassociate_pass", "sink": "add_sinking_pass",
    "loop-deletion": "add_loop_deletion_pass", "loop-strength-reduce": "add_loop_strength_reduce_pass",
    "jump-threading": "add_jump_threading_pass", "memcpyopt": "add_mem_copy_opt_pass",
    "tailcallelim": "add_tail_call_elimination_pass", "reg2mem": "add_register_to_memory_pass",
    "loop-unroll-and-jam": "add_loop_unroll_and_jam_pass",
}


class LLVMError(RuntimeError):
    """LLVM rejected IR (parse or verifier error); the message quotes the offending IR line."""


def llvm():
    """llvmlite.binding, with the native target (and all targets, for PTX) initialized once."""
    import llvmlite.binding as binding

    _init(binding)
    return binding


@functools.lru_cache(maxsize=None)
def _init(binding) -> None:
    binding.initialize_native_target()
    binding.initialize_native_asmprinter()
    binding.initialize_all_targets()
    binding.initialize_all_asmprinters()


@dataclass(frozen=True)
class HostInfo:
    """The host as LLVM sees it: triple, CPU name and enabled features."""

    triple: str
    cpu: str
    features: str

    @property
    def vector_features(self) -> list[str]:
        """The SIMD features enabled (sse/avx/fma/neon...)."""
        return sorted(f[1:] for f in self.features.split(",")
                      if f.startswith("+") and re.match(r"\+(sse|avx|fma|neon|sve)", f))


@functools.lru_cache(maxsize=1)
def host_info() -> HostInfo:
    """The host CPU name and features, as LLVM detects them."""
    b = llvm()
    return HostInfo(b.get_process_triple(), b.get_host_cpu_name(), b.get_host_cpu_features().flatten())


def host_vector_bits() -> int:
    """The widest float SIMD register of this host (512 with AVX-512F, 256 with AVX2/AVX, else 128)."""
    feats = host_info().vector_features
    if "avx512f" in feats:
        return 512
    if "avx2" in feats or "avx" in feats:
        return 256
    return 128


def with_vector_width(ir_text: str, name: str, bits: int) -> str:
    """LLVM IR text with function ``name`` asking for ``bits``-wide vectors (``"prefer-vector-width"``).

    LLVM on recent x86 cores prefers 256-bit vectors even when AVX-512 is present; a register-blocked
    micro-kernel written for 512-bit registers then runs at half speed unless its function asks for them.
    """
    pat = re.compile(r'^(define void @"?' + re.escape(name) + r'"?\([^\n]*\))', re.M)
    if not pat.search(ir_text):
        raise LLVMError(f"function {name} not found in the IR")
    text = pat.sub(r"\1 #900", ir_text, count=1)
    return text + f'\nattributes #900 = {{ "prefer-vector-width"="{bits}" "min-legal-vector-width"="{bits}" }}\n'


@functools.lru_cache(maxsize=None)
def target_machine(opt: int = 3, triple: str | None = None, cpu: str | None = None, features: str | None = None):
    """A TargetMachine for the host (default) or another triple (e.g. 'nvptx64-nvidia-cuda', cpu 'sm_80')."""
    b = llvm()
    if triple is None:
        h = host_info()
        triple, cpu, features = h.triple, cpu or h.cpu, features if features is not None else h.features
    target = b.Target.from_triple(triple)
    return target.create_target_machine(cpu=cpu or "", features=features or "", opt=opt, jit=triple is None,
                                        codemodel="default" if triple else "jitdefault")


def _quote_line(text: str, msg: str) -> str:
    m = re.search(r":(\d+):(\d+):", msg)
    if not m:
        return msg
    lines = text.splitlines()
    n = int(m.group(1))
    if 1 <= n <= len(lines):
        return f"{msg.rstrip()}\n  IR line {n}: {lines[n - 1].strip()}"
    return msg


def parse_assembly(text: str):
    """Parse LLVM IR text into a module (not verified); a parse error quotes the offending line."""
    try:
        return llvm().parse_assembly(text)
    except RuntimeError as e:
        raise LLVMError("LLVM could not parse the IR: " + _quote_line(text, str(e))) from None


def parse_ir(text: str, triple: str | None = None):
    """Parse and verify LLVM IR text into a module for the host (or ``triple``); errors quote the bad line."""
    mod = parse_assembly(text)
    try:
        mod.verify()
    except RuntimeError as e:
        raise LLVMError(f"the LLVM verifier rejected the IR:\n{str(e).strip()}\n"
                        "(the line after each message is the offending instruction)") from None
    tm = target_machine(3, triple)
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    return mod


def optimize(text: str, opt: int = 3, passes: Sequence[str] | None = None, loop_vectorize: bool = True,
             slp_vectorize: bool = True, loop_unroll: bool = True) -> str:
    """Optimize IR text: LLVM's ``-O{opt}`` pipeline, or the named ``passes`` in order; returns the new IR text."""
    if not 0 <= int(opt) <= 3:
        raise ValueError(f"opt must be 0, 1, 2 or 3, got {opt}")
    b = llvm()
    mod = parse_ir(text)
    tm = target_machine(int(opt))
    pto = b.create_pipeline_tuning_options(speed_level=int(opt))
    pto.loop_vectorization = bool(loop_vectorize) and opt >= 2
    pto.slp_vectorization = bool(slp_vectorize) and opt >= 2
    pto.loop_unrolling = bool(loop_unroll)
    pb = b.create_pass_builder(tm, pto)
    if passes is None:
        mpm = pb.getModulePassManager()
    else:
        mpm = b.create_new_module_pass_manager()
        for p in passes:
            if p not in PASSES:
                raise ValueError(f"unknown pass {p!r}; known passes: {', '.join(sorted(PASSES))}")
            getattr(mpm, PASSES[p])()
    mpm.run(mod, pb)
    return str(mod)


def emit_asm(text: str, triple: str | None = None, cpu: str | None = None) -> str:
    """Target assembly for (already optimized) IR text: host x86/ARM by default, or e.g. PTX for nvptx64."""
    mod = parse_ir(text, triple)
    return target_machine(3, triple, cpu).emit_assembly(mod)


def has_target(triple: str) -> bool:
    """Whether llvmlite's LLVM was built with the backend for ``triple`` (e.g. 'nvptx64-nvidia-cuda')."""
    try:
        llvm().Target.from_triple(triple)
        return True
    except RuntimeError:
        return False


class JitModule:
    """An optimized module compiled to host machine code (MCJIT); keeps the engine alive while referenced."""

    def __init__(self, text: str) -> None:
        guards.check_native("JIT-compiling LLVM IR")
        b = llvm()
        self.ir = text
        self.module = parse_ir(text)
        self.engine = b.create_mcjit_compiler(self.module, target_machine(3))
        self.engine.finalize_object()

    def address(self, name: str) -> int:
        """The address of function ``name``."""
        addr = self.engine.get_function_address(name)
        if not addr:
            raise LLVMError(f"function {name!r} is not defined in the module")
        return addr

    def cfunc(self, name: str, restype: Any, *argtypes: Any):
        """Function ``name`` as a ctypes callable with the given C types."""
        import ctypes

        return ctypes.CFUNCTYPE(restype, *argtypes)(self.address(name))


_JIT_CACHE: dict[tuple, JitModule] = {}


def jit(text: str, opt: int = 3, passes: Sequence[str] | None = None, **pipeline: bool) -> JitModule:
    """Optimize and JIT-compile IR text; cached by (IR text, options), so re-running a cell is instant."""
    guards.check_native("JIT-compiling LLVM IR")   # not even a cached module: a judge child runs no native code
    key = (text, int(opt), tuple(passes) if passes is not None else None, tuple(sorted(pipeline.items())))
    hit = _JIT_CACHE.get(key)
    if hit is None:
        hit = JitModule(optimize(text, opt, passes, **pipeline))
        _JIT_CACHE[key] = hit
    return hit


def cache_info() -> dict[str, int]:
    """How many compiled modules the JIT cache holds."""
    return {"modules": len(_JIT_CACHE)}
