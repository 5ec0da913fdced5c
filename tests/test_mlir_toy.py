"""infopt.mlir.toy: the Toy front end, canonicalizations, shape inference and the lowering to affine and LLVM keep
what each program prints (numpy semantics, and a native run through mlir-cpu-runner-19)."""
import numpy as np
import pytest

from infopt.mlir.toy import (TOY, SimplifyRedundantTranspose, ToySyntaxError, apply_patterns, canonicalize,
                             emit_toy, infer_shapes, lower_print, lower_to_affine, run_toy, run_toy_native)
from infopt.mlir.toy.programs import random_toy_source
from infopt.mlir.xdsl_ir import parse_module, print_ir

SOURCES = [random_toy_source(np.random.default_rng(seed)) for seed in range(12)]


def _names(module):
    return [op.name for op in module.walk()]


def _same(a, b):
    return len(a) == len(b) and all(x.shape == y.shape and np.allclose(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("k", range(len(SOURCES)))
def test_canonicalize_and_shape_inference_keep_what_is_printed(k):
    module = emit_toy(SOURCES[k])
    want = run_toy(module)
    canonicalize(module)
    infer_shapes(module)
    module.verify()
    assert _same(run_toy(module), want), SOURCES[k]
    assert "toy.reshape" not in _names(module)               # every reshape here is of a constant
    for op in module.walk():
        if op.name == "toy.transpose":
            assert op.arg.owner.name != "toy.transpose"      # no transpose of a transpose is left
    assert "tensor<*xf64>" not in print_ir(module)


@pytest.mark.parametrize("k", [0, 5, 9])
def test_the_native_run_prints_what_numpy_prints(k):
    module = emit_toy(SOURCES[k])
    want = run_toy(module)
    canonicalize(module)
    infer_shapes(module)
    affine_module = lower_to_affine(module)
    assert {"affine.for", "memref.alloc", "toy.print"} <= set(_names(affine_module))   # the partial lowering
    got, llvm_ir = run_toy_native(lower_print(affine_module))
    assert "llvm.call" in llvm_ir and _same(got, want), SOURCES[k]


def test_the_transpose_pattern_alone_removes_pairs_but_keeps_the_inner_one_when_used():
    module = emit_toy("def main() { var a = [[1, 2, 3]]; var t = transpose(a); print(t); print(transpose(t)); }")
    apply_patterns(module, [SimplifyRedundantTranspose()])
    assert _names(module).count("toy.transpose") == 1
    assert _same(run_toy(module), [np.array([[1.0], [2.0], [3.0]]), np.array([[1.0, 2.0, 3.0]])])


def test_the_ir_prints_and_parses_back():
    module = emit_toy(SOURCES[3])
    again = parse_module(print_ir(module), [TOY])
    assert _same(run_toy(again), run_toy(module))


def test_bad_programs_are_refused_with_where_and_what():
    with pytest.raises(ToySyntaxError, match="line 1: expected ';'"):
        emit_toy("def main() { var a = [1, 2] print(a); }")
    with pytest.raises(ToySyntaxError, match="unknown variable 'b'"):
        emit_toy("def main() { print(b); }")
    module = emit_toy("def main() { var a = [[1, 2]]; var b = [[1], [2]]; print(a + b); }")
    with pytest.raises(Exception, match="differ"):
        infer_shapes(module)
        module.verify()
    with pytest.raises(ValueError, match="canonicalize"):
        m = emit_toy("def main() { var a = [[1, 2]]; var b<2, 1> = a; print(b); }")
        infer_shapes(m)
        lower_to_affine(m)


def test_the_constant_transpose_fold_keeps_what_is_printed_under_its_size_rule():
    """FoldConstantTranspose folds every transpose of a constant, except of a shared one over 16 elements."""
    from infopt.mlir.toy.patterns import FoldConstantTranspose, apply_pattern_class

    big = "[" + ", ".join(f"[{i}, {i + 1}]" for i in range(9)) + "]"        # 18 elements
    for source, left in ((f"def main() {{ var a = {big}; print(transpose(a)); print(a * a); }}", 1),
                         (f"def main() {{ var a = {big}; print(transpose(a)); }}", 0),
                         ("def main() { var a = [[1, 2], [3, 4]]; print(transpose(a)); print(a + a); }", 0),
                         ("def main() { var a = [[1, 2]]; print(transpose(a + a)); }", 1)):
        module = emit_toy(source)
        got = apply_pattern_class(FoldConstantTranspose, module)
        assert got is not module and _names(got).count("toy.transpose") == left, source
        assert _same(run_toy(got), run_toy(module)), source


def test_apply_pattern_class_refuses_the_library_patterns_and_non_patterns_by_name():
    from infopt.mlir.toy.patterns import FoldConstantTranspose, apply_pattern_class

    class Mine(FoldConstantTranspose):
        pass

    module = emit_toy("def main() { var a = [[1, 2]]; print(transpose(a)); }")
    with pytest.raises(TypeError, match="subclasses the library's FoldConstantTranspose"):
        apply_pattern_class(Mine, module)
    with pytest.raises(TypeError, match="RewritePattern"):
        apply_pattern_class(int, module)


def test_patterns_that_never_reach_a_fixpoint_stop_with_a_message_not_a_hang():
    """xDSL's walker has no bound of its own: a pattern that reports a rewrite every time (here it replaces a
    transpose by a fresh copy of itself) would loop forever; apply_patterns stops it, as MLIR's greedy driver does."""
    import time

    from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

    from infopt.mlir.toy.dialect import TransposeOp
    from infopt.mlir.toy.patterns import PatternsDidNotConverge, apply_pattern_class, apply_patterns, canonicalize

    class Forever(RewritePattern):
        @op_type_rewrite_pattern
        def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
            rewriter.replace(op, TransposeOp(op.arg))

    module = emit_toy("def main() { var a = [[1, 2], [3, 4]]; print(transpose(a)); }")
    ops = sum(1 for _ in module.walk())
    began = time.monotonic()
    with pytest.raises(PatternsDidNotConverge, match=rf"kept rewriting: {16 * ops + 65} rewrites of a module of {ops} ops"):
        apply_pattern_class(Forever, module)
    assert time.monotonic() - began < 30
    with pytest.raises(PatternsDidNotConverge, match=rf"{2 * ops + 65} rewrites"):
        apply_patterns(module.clone(), [Forever()], rewrites_per_op=2)
    # the library's canonicalizations reach their fixpoint well inside the bound
    program = "def main() { var a<2, 2> = [1, 2, 3, 4]; var b<4> = a; print(transpose(transpose(b))); }"
    assert "toy.transpose" not in _names(canonicalize(emit_toy(program)))


def test_passes_run_by_name_and_a_students_pass_is_registered_under_its_own():
    """infopt.mlir.toy.passes: pipelines by name; run_with_pass reports instead of raising, and never falls back to
    the library's shape inference when the student's pass has another name."""
    from xdsl.passes import ModulePass

    from infopt.mlir.toy.passes import ToyShapeInference, run_pipeline, run_with_pass

    module = emit_toy(SOURCES[2])
    out = run_pipeline(module, "toy-canonicalize,toy-shape-inference")
    assert out is not module and "tensor<*xf64>" not in print_ir(out) and "tensor<*xf64>" in print_ir(module)
    assert _same(run_toy(out), run_toy(module))

    class Renamed(ModulePass):
        name = "my-shapes"

        def apply(self, ctx, op):
            pass

    missing = run_with_pass(Renamed, module, "toy-shape-inference")
    assert missing["module"] is None and "Unrecognized passes" in missing["error"]["message"]
    assert run_with_pass(int, module, "toy-canonicalize")["error"]["type"] == "TypeError"
    mismatch = emit_toy("def main() { var a = [[1, 2, 3]]; print(a * transpose(a)); }")
    failed = run_with_pass(ToyShapeInference, mismatch, "toy-shape-inference")["error"]
    assert failed["type"] == "PassFailedException" and "toy.mul" in failed["message"]


def test_run_with_pass_tells_a_pass_that_refused_from_a_result_that_does_not_verify():
    """run_with_pass: what the pass raised is "error", with the module as the pass left it; a pass that accepts a
    module it should have refused leaves "error" None and the verifier's complaint in "verify_error"."""
    from xdsl.dialects.builtin import UnrankedTensorType
    from xdsl.passes import ModulePass

    from infopt.mlir.toy import AddOp, MulOp, TransposeOp
    from infopt.mlir.toy.dialect import set_result_shape, shape_of
    from infopt.mlir.toy.passes import ToyShapeInference, run_with_pass

    class Lenient(ModulePass):
        name = "toy-shape-inference"

        def apply(self, ctx, op):
            for inner in op.walk():
                if isinstance(inner, (AddOp, MulOp, TransposeOp)) and isinstance(inner.results[0].type,
                                                                                 UnrankedTensorType):
                    set_result_shape(inner, shape_of(inner.operands[0].type))

    mismatch = emit_toy("def main() { var a = [[1, 2, 3]]; var b = [[1], [2], [3]]; print(a * b); }")
    lenient = run_with_pass(Lenient, mismatch, "toy-shape-inference")
    assert lenient["error"] is None and "toy.mul" in lenient["verify_error"]["message"]
    refused = run_with_pass(ToyShapeInference, mismatch, "toy-shape-inference")
    assert refused["verify_error"] is None and refused["error"]["type"] == "PassFailedException"
    assert refused["module"] is not None          # as the pass left it, for the feedback to show
    clean = run_with_pass(ToyShapeInference, emit_toy(SOURCES[2]), "toy-shape-inference")
    assert clean["error"] is None and clean["verify_error"] is None


def test_run_with_pass_names_the_ops_a_pass_replaced_though_the_printed_module_is_the_same():
    """A pass that swaps ops for new ones of the inferred type gives a module of the same types as one that retypes
    them in place: run_with_pass's "changed_ops" tells them apart (and says nothing of the library's
    canonicalization, which runs first)."""
    from xdsl.dialects.builtin import UnrankedTensorType
    from xdsl.passes import ModulePass

    from infopt.mlir.toy.passes import ToyShapeInference, run_with_pass

    class Replacing(ModulePass):
        name = "toy-shape-inference"

        def apply(self, ctx, op):
            ToyShapeInference().apply(ctx, op)           # the shapes, then every op swapped for a copy
            for inner in list(op.walk()):
                if inner.name in ("toy.add", "toy.mul", "toy.transpose"):
                    copy = inner.clone()
                    inner.parent_block().insert_op_before(copy, inner)
                    for old, new in zip(inner.results, copy.results):
                        old.replace_all_uses_with(new)
                    inner.detach()
                    inner.erase()

    module = emit_toy(SOURCES[2])
    library = run_with_pass(ToyShapeInference, module, "toy-canonicalize,toy-shape-inference")
    replacing = run_with_pass(Replacing, module, "toy-canonicalize,toy-shape-inference")
    assert library["changed_ops"] == [] and replacing["error"] is None and replacing["verify_error"] is None
    assert replacing["changed_ops"] and all(c.split()[0] in ("added", "removed") for c in replacing["changed_ops"])
    assert not any(isinstance(r.type, UnrankedTensorType) for o in replacing["module"].walk() for r in o.results)


def test_run_toy_runs_main_even_when_another_function_comes_first():
    from infopt.mlir.toy.dialect import TOY

    helper = ('func.func @helper(%a: tensor<2x2xf64>) {\n  "toy.print"(%a) : (tensor<2x2xf64>) -> ()\n'
              '  func.return\n}\n')
    module = parse_module(helper, [TOY])
    module.body.block.add_op(next(op for op in emit_toy(SOURCES[2]).walk() if op.name == "func.func").clone())
    assert _same(run_toy(module), run_toy(emit_toy(SOURCES[2])))
    with pytest.raises(ValueError, match="has none"):
        run_toy(parse_module(helper, [TOY]))
