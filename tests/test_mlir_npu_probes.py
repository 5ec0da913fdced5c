"""infopt.mlir.npu.probes: what unit 04's tests of an npu op class and a schedule function send back as data (the
library's own op and schedule stand in for the student's), and that at grading each call goes to the kernel by `via`
with a target that names the function itself."""
import pytest

from infopt.accel import AccelConfig
from infopt.grading.remote import _library_function
from infopt.mlir.npu import MatmulOp, emit_matmul_schedule, lower_to_npu, matmul_module
from infopt.mlir.npu.probes import build_matmul_op, lower_matmul_with, parse_with_op, parse_type
from infopt.mlir.xdsl_ir import print_ir

GENERIC = ('func.func @f(%i: index, %t: i1) {\n  "npu.matmul"(%i, %i, %i, %i, %i, %i, %t) <{tile = array<i64: 8, 4, '
           '4>, dataflow = "os", dtype = f32}> : (index, index, index, index, index, index, i1) -> ()\n  return\n}\n')


def test_a_well_formed_op_is_reported_with_its_operands_in_order_and_its_tile_as_text():
    report = build_matmul_op(MatmulOp, sizes=(4, None, 2), tile=(8, 4, 4), dataflow="ws", dtype="i8")
    assert report["build_error"] is None and report["verify"] is None
    assert report["name"] == "npu.matmul"
    assert report["operands"] == list(range(7))
    assert report["accessors"] == {"a_addr": 0, "b_addr": 1, "c_addr": 2, "m": 3, "n": 4, "k": 5, "acc": 6}
    assert report["tile"] == "array<i64: 8, 4, 4>"
    assert "infopt.mlir.npu.dialect:MatmulOp" in report["bases"]
    assert "xdsl.irdl.operations:IRDLOperation" in report["bases"]


@pytest.mark.parametrize("kw,word", [
    ({"dataflow": "rs"}, "dataflow"), ({"dtype": "i32"}, "dtype"), ({"tile": (8, 0, 4)}, "tile"),
    ({"sizes": (4, 5, 4)}, "n"), ({"wrong_operand": 6}, "acc"),
])
def test_what_verify_raised_comes_back_as_its_type_and_message(kw, word):
    error = build_matmul_op(MatmulOp, **kw)["verify"]
    assert error is not None and error["verify_exception"] and error["type"] == "VerifyException"
    assert word in error["message"]


def test_a_constructor_that_raises_and_a_non_class_are_reported_not_raised():
    class Broken(MatmulOp):
        def __init__(self, *args):
            raise RuntimeError("no")

    assert build_matmul_op(Broken)["build_error"] == "RuntimeError: no"
    assert build_matmul_op(lambda *a: None) == {"bases": None, "build_error": "not a class but a function"}


def test_parsing_with_the_op_alone():
    assert parse_with_op(MatmulOp, GENERIC) == {"error": None, "found": 1}
    bad = parse_with_op(MatmulOp, GENERIC.replace('"os"', '"xx"'))
    assert bad["found"] == 0 and "dataflow" in bad["error"]["message"]


def test_lowering_a_fresh_matmul_with_an_emit_function_is_lower_to_npu_untidied():
    cfg = AccelConfig(4, 4, "ws", "int8")
    got = lower_matmul_with(emit_matmul_schedule, 10, 5, 6, cfg)
    want = lower_to_npu(matmul_module(10, 5, 6, cfg), cfg, emit_matmul_schedule, tidy=False)
    assert print_ir(got) == print_ir(want)


class _Remote:
    """A StudentFunction's shape: `via` records the target and arguments instead of crossing."""
    __infopt_remote__ = True

    def via(self, target, *args, **kwargs):
        return target, args, kwargs


@pytest.mark.parametrize("probe,args", [
    (lower_matmul_with, (3, 4, 5, AccelConfig(2, 2, "os", "float32"))),
    (build_matmul_op, ()),
    (parse_with_op, (GENERIC,)),
])
def test_at_grading_each_probe_runs_where_the_student_code_is(probe, args):
    target, sent, _ = probe(_Remote(), *args)
    assert _library_function(target) is probe
    assert len(sent) >= len(args)


def test_types_are_parsed_from_their_text():
    assert str(parse_type("f32")) == "f32" and str(parse_type("index")) == "index"
