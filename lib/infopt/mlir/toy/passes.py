"""Toy's transformations as xDSL `ModulePass`es, run by name through a pass pipeline, as `mlir-opt` runs its passes.

A pass is registered under its `name`; a pipeline spec ("toy-canonicalize,toy-shape-inference") names the passes to
run, in order, on a module. `run_with_pass` is how unit 04's tests run a student's pass: registered beside the
library's canonicalization (never beside the library's own shape inference, which it would otherwise shadow).

    run_pipeline(module, "toy-canonicalize,toy-shape-inference")               # a new module, the library's passes
    run_with_pass(ShapeInferencePass, module, "toy-shape-inference")           # {"module": ..., "error": ...}
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from xdsl.passes import ModulePass, PassPipeline

from ..xdsl_ir import context
from .dialect import TOY
from .patterns import canonicalize
from .shapes import infer_shapes


@dataclass(frozen=True)
class ToyCanonicalize(ModulePass):
    """Chapter 3's canonicalizations to a fixpoint, then dead-code removal."""

    name = "toy-canonicalize"

    def apply(self, ctx: Any, op: Any) -> None:
        canonicalize(op)


@dataclass(frozen=True)
class ToyShapeInference(ModulePass):
    """Chapter 4: every unranked Toy result inferred through the ShapeInference interface; a result that cannot be
    inferred (its operands stay unranked, or an add's or mul's operand shapes differ) fails the pass."""

    name = "toy-shape-inference"

    def apply(self, ctx: Any, op: Any) -> None:
        from xdsl.utils.exceptions import PassFailedException, VerifyException

        try:
            infer_shapes(op)
            op.verify()
        except (ValueError, VerifyException) as err:
            raise PassFailedException(f"toy-shape-inference: {err}") from err


PASSES = (ToyCanonicalize, ToyShapeInference)


def _applied(module: Any, spec: str, passes: Sequence[type]) -> tuple[Any, BaseException | None]:
    """A copy of `module` with the pipeline `spec` applied, unverified, and what a pass raised (None if nothing):
    after a failure the copy is as the failing pass left it."""
    registry = {p.name: (lambda p=p: p) for p in passes}
    pipeline = PassPipeline.parse_spec(registry, spec)
    out = module.clone()
    try:
        pipeline.apply(context([TOY]), out)
    except Exception as err:  # noqa: BLE001 (the caller reports or raises it)
        return out, err
    return out, None


def run_pipeline(module: Any, spec: str, passes: Sequence[type] = PASSES) -> Any:
    """A copy of `module` with the pipeline `spec` applied ("a,b{option=1}"), each name looked up among `passes`
    (classes deriving ModulePass, by their `name`); the result verified. xDSL's error when a name is unknown."""
    out, err = _applied(module, spec, passes)
    if err is not None:
        raise err
    out.verify()
    return out


def _error(err: BaseException) -> dict:
    return {"type": type(err).__name__, "bases": [c.__name__ for c in type(err).__mro__[1:]],
            "message": str(err)[:1000]}


def run_with_pass(pass_class: Any, module: Any, spec: str) -> dict:
    """The pipeline `spec` on a copy of `module`, with `pass_class` registered under its `name` beside the library's
    toy-canonicalize, as a report: "module", the copy as the pipeline left it (None if the pipeline could not start:
    an unknown pass name, a class that is no pass); "error", what a pass raised (type, bases and message) or None;
    "verify_error", what verifying the result raised when the passes did not (a pass that accepted what it should
    have refused); "changed_ops", the ops the student's pass itself added or removed ("added toy.add", ...). At
    grading the class is a name in the student's kernel, and the run happens there (`via`): the module crosses as
    MLIR text."""
    if getattr(pass_class, "__infopt_remote__", False):
        return pass_class.via("infopt.mlir.toy.passes:run_with_pass", module, spec)
    if not (isinstance(pass_class, type) and issubclass(pass_class, ModulePass)):
        return {"module": None, "verify_error": None, "changed_ops": [], "error": {
            "type": "TypeError", "bases": [], "message": f"the pass must be a class deriving from xdsl's ModulePass, "
                                                         f"got {pass_class!r}"}}
    changed: list[str] = []
    try:
        out, err = _applied(module, spec, (ToyCanonicalize, _watched(pass_class, changed)))
    except Exception as err:  # noqa: BLE001 (the pipeline spec itself was refused: an unknown name)
        return {"module": None, "error": _error(err), "verify_error": None, "changed_ops": []}
    report = {"module": out, "error": None, "verify_error": None, "changed_ops": changed[:20]}
    if err is not None:
        return dict(report, error=_error(err))
    try:
        out.verify()
    except Exception as bad:  # noqa: BLE001 (reported: the pass accepted a module it should have refused)
        return dict(report, verify_error=_error(bad))
    return report


def _watched(pass_class: type, changed: list[str]) -> type:
    """`pass_class` as the pipeline runs it, noting in `changed` every op its `apply` added or removed (a new op
    object in place of an old one counts as both: no printed form shows it)."""

    class Watched(pass_class):  # type: ignore[misc, valid-type]
        def apply(self, ctx: Any, op: Any) -> None:
            before = {id(o): o for o in op.walk()}     # the ops themselves are kept: their ids stay theirs
            super().apply(ctx, op)
            after = list(op.walk())
            kept = {id(o) for o in after if before.get(id(o)) is o}
            changed.extend(f"added {o.name}" for o in after if id(o) not in kept)
            changed.extend(f"removed {o.name}" for i, o in before.items() if i not in kept)

    Watched.__name__ = Watched.__qualname__ = pass_class.__name__
    return Watched
