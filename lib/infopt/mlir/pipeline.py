"""Progressive lowering with upstream MLIR: named `mlir-opt-19` stages, keeping the IR after each one.

    lowering = lower(module_text)          # CPU_PIPELINE: tensors -> bufferized -> loops -> vector -> llvm -> LLVM IR
    lowering = lower(model_text, MODEL_PIPELINE)   # the same without the affine vectorizer (see MODEL_PIPELINE)
    lowering["loops"]                      # the IR after the stage called "loops"
    lowering.op_counts("vector")           # {dialect: number of ops}

A stage is one `mlir-opt` run (or `mlir-translate --mlir-to-llvmir` for the last); `lower` runs them in order and
records each stage's output and time, so a view can show what every stage changed.
"""
from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field

from .tools import run_tool

BUFFERIZE = ("--one-shot-bufferize=bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map",
             "--buffer-results-to-out-params=hoist-static-allocs", "--buffer-deallocation-pipeline", "--canonicalize")
# math first: libm calls for vector math (erf) are scalarised into vector ops, which vector-to-llvm then lowers
TO_LLVM = ("--convert-linalg-to-loops", "--lower-affine", "--convert-math-to-llvm", "--convert-math-to-libm",
           "--convert-vector-to-scf", "--convert-scf-to-cf", "--convert-vector-to-llvm", "--expand-strided-metadata",
           "--lower-affine", "--finalize-memref-to-llvm", "--convert-arith-to-llvm", "--convert-func-to-llvm",
           "--convert-cf-to-llvm", "--reconcile-unrealized-casts")
TRANSLATE = "mlir-translate"


@dataclass(frozen=True)
class Stage:
    """One named lowering step: the `mlir-opt` flags it runs (or TRANSLATE alone) and what it does, in a line.
    A `script` (a transform-dialect module) is appended to the IR and run by `--transform-interpreter`, then
    erased."""

    name: str
    passes: tuple[str, ...]
    what: str
    script: str = ""


CPU_PIPELINE: tuple[Stage, ...] = (
    Stage("tensors", ("--canonicalize",), "linalg on tensors: values, no memory yet (the emitter's output)"),
    Stage("bufferized", BUFFERIZE, "one-shot bufferization: tensors become memrefs (buffers), results out-params"),
    Stage("loops", ("--convert-linalg-to-affine-loops", "--canonicalize"),
          "linalg ops become affine loop nests of scalar loads, arithmetic and stores"),
    Stage("vector", ("--affine-super-vectorize=virtual-vector-size=8", "--canonicalize"),
          "innermost contiguous loops become 8-wide vector transfers and vector arithmetic"),
    Stage("llvm", TO_LLVM, "everything lowered to the llvm dialect (affine/scf -> cf -> llvm, memref descriptors)"),
    Stage("llvm-ir", (TRANSLATE,), "mlir-translate: the llvm dialect printed as LLVM IR, ready for clang/llc"),
)


# For whole models the affine super-vectorizer is left out: in MLIR 19 it rejects conv reduction nests ("should not
# have broadcast dimensions") and vectorizes strided pooling windows as if they were contiguous (wrong numbers;
# tests/test_mlir_pipeline.py shows both). clang's loop vectorizer vectorizes the scalar loops instead.
MODEL_PIPELINE: tuple[Stage, ...] = tuple(s for s in CPU_PIPELINE if s.name != "vector")


@dataclass(frozen=True)
class StageResult:
    """The IR after one stage and the seconds the stage took."""

    stage: Stage
    ir: str
    seconds: float


@dataclass
class Lowering:
    """The input and the IR after every stage, in order."""

    input: str
    results: list[StageResult] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        """The stage names, in order."""
        return [r.stage.name for r in self.results]

    def __getitem__(self, name: str) -> str:
        for r in self.results:
            if r.stage.name == name:
                return r.ir
        raise KeyError(f"no stage {name!r}; the stages are {self.names}")

    @property
    def final(self) -> str:
        """The last stage's output (LLVM IR for CPU_PIPELINE)."""
        return self.results[-1].ir if self.results else self.input

    @property
    def seconds(self) -> float:
        """Total seconds spent in the stages."""
        return sum(r.seconds for r in self.results)

    def op_counts(self, name: str) -> dict[str, int]:
        """{dialect: ops} in the IR after stage `name` (LLVM IR counts as dialect "llvm-ir": its instructions)."""
        return dialect_counts(self[name])


_OP = re.compile(r"^\s*(?:(?:%[\w.$#:-]+(?::\d+)?(?:, )?)+ = )?\"?([a-z_][\w]*)\.([\w.]+)\"?[ (<{:]?", re.M)
_LLVM_INST = re.compile(r"^\s+(?:%[\w.]+ = )?([a-z][a-z_]*)\b", re.M)


def op_counts(text: str) -> Counter:
    """{op name: count} of MLIR text (custom and generic forms); LLVM IR text gives {instruction: count}."""
    if _is_llvm_ir(text):
        insts = [m.group(1) for m in _LLVM_INST.finditer(text)]
        return Counter(insts)
    out: Counter = Counter()
    for m in _OP.finditer(text):
        dialect, name = m.group(1), m.group(2)
        if dialect in ("affine_map", "affine_set") or name.startswith("_"):
            continue
        out[f"{dialect}.{name}"] += 1
    return out


def dialect_counts(text: str) -> dict[str, int]:
    """{dialect: number of ops} of MLIR text; LLVM IR text counts as {"llvm-ir": instructions}."""
    if _is_llvm_ir(text):
        return {"llvm-ir": sum(op_counts(text).values())}
    out: Counter = Counter()
    for op, n in op_counts(text).items():
        out[op.split(".")[0]] += n
    return dict(sorted(out.items()))


def _is_llvm_ir(text: str) -> bool:
    return bool(re.search(r"^define ", text, re.M)) or "target triple" in text


def run_stage(stage: Stage, text: str) -> str:
    """The IR after one stage."""
    if stage.passes == (TRANSLATE,):
        return run_tool("mlir-translate", ["--mlir-to-llvmir"], text)
    if stage.script:
        body = text.rstrip()
        # the schedule goes inside the payload's module (after any attribute aliases printed before it)
        if re.match(r"(?:\s*#[^\n]*\n)*\s*module\b", body) and body.endswith("}"):
            body = body[:-1] + stage.script + "}\n"
        else:
            body = body + "\n" + stage.script
        return run_tool("mlir-opt", ["--transform-interpreter", "--test-transform-dialect-erase-schedule",
                                     *stage.passes], body)
    return run_tool("mlir-opt", list(stage.passes), text)


def lower(text: str, stages: tuple[Stage, ...] | list[Stage] = CPU_PIPELINE, until: str | None = None) -> Lowering:
    """Run `stages` in order on MLIR `text` (stopping after stage `until` if given), keeping every stage's IR."""
    names = [s.name for s in stages]
    if until is not None and until not in names:
        raise ValueError(f"until={until!r} is not a stage; the stages are {names}")
    out = Lowering(text)
    current = text
    for stage in stages:
        start = time.perf_counter()
        current = run_stage(stage, current)
        out.results.append(StageResult(stage, current, time.perf_counter() - start))
        if stage.name == until:
            break
    return out


def with_stage(stages: tuple[Stage, ...], after: str, new: Stage) -> tuple[Stage, ...]:
    """A copy of `stages` with `new` inserted after the stage named `after`."""
    names = [s.name for s in stages]
    if after not in names:
        raise ValueError(f"no stage {after!r} to insert after; the stages are {names}")
    i = names.index(after) + 1
    return (*stages[:i], new, *stages[i:])


def without_stage(stages: tuple[Stage, ...], name: str) -> tuple[Stage, ...]:
    """A copy of `stages` without the stage called `name`."""
    if name not in [s.name for s in stages]:
        raise ValueError(f"no stage {name!r}; the stages are {[s.name for s in stages]}")
    return tuple(s for s in stages if s.name != name)


_SSA = re.compile(r"%[\w.$-]+|\^bb\d+|#map\d*|\bloc\(\S+\)")


def changed_lines(before: str, after: str) -> list[bool]:
    """For each line of `after`: is it new, i.e. not matched (up to SSA names) to a line of `before` by a diff?"""
    import difflib

    norm = lambda text: [_SSA.sub("%_", ln.strip()) for ln in text.splitlines()]  # noqa: E731
    a, b = norm(before), norm(after)
    flags = [True] * len(b)
    for block in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks():
        for j in range(block.b, block.b + block.size):
            flags[j] = False
    return flags
