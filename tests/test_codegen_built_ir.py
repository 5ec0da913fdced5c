"""infopt.codegen.built_ir: what an llvmlite builder made, as data, and that IR parsed and run on fenced buffers."""
import numpy as np
import pytest
from llvmlite import ir

from infopt.codegen.built_ir import _in_buffer, build_into_module, instructions, run_float_function
from infopt.grading import guards
from infopt.grading.errors import HarnessError


def build_dot(module: ir.Module) -> ir.Function:
    """float dot(float* a, float* b, i64 n): a float running sum over i < n, in phi nodes."""
    f32, i64 = ir.FloatType(), ir.IntType(64)
    fn = ir.Function(module, ir.FunctionType(f32, [f32.as_pointer(), f32.as_pointer(), i64]), name="dot")
    a, b, n = fn.args
    entry, head, body, done = (fn.append_basic_block(x) for x in ("entry", "head", "body", "done"))
    builder = ir.IRBuilder(entry)
    builder.branch(head)
    builder.position_at_end(head)
    i = builder.phi(i64)
    acc = builder.phi(f32)
    i.add_incoming(ir.Constant(i64, 0), entry)
    acc.add_incoming(ir.Constant(f32, 0.0), entry)
    builder.cbranch(builder.icmp_signed("<", i, n), body, done)
    builder.position_at_end(body)
    x = builder.load(builder.gep(a, [i]))
    y = builder.load(builder.gep(b, [i]))
    nxt = builder.fadd(acc, builder.fmul(x, y))
    i2 = builder.add(i, ir.Constant(i64, 1))
    i.add_incoming(i2, body)
    acc.add_incoming(nxt, body)
    builder.branch(head)
    builder.position_at_end(done)
    builder.ret(acc)
    return fn


def test_what_the_builder_made_comes_back_as_data():
    made = build_into_module(build_dot, "m")
    assert made["function"] and made["same_module"] and made["name"] == "dot" and made["returned"] == "Function"
    assert made["return_type"] == "float" and made["arg_types"][2] == "i64"
    assert 'define float @"dot"' in made["text"]
    other = build_into_module(lambda module: build_dot(ir.Module("elsewhere")), "m")
    assert other["function"] and not other["same_module"] and "dot" not in other["text"]
    assert build_into_module(lambda module: module, "m") == {"returned": "Module", "function": False,
                                                             "text": str(ir.Module("m"))}


def test_instructions_and_a_run_on_views_read_only_inside_n():
    text = build_into_module(build_dot, "m")["text"]
    insts = instructions(text, "dot")
    assert ("phi", "float") in insts and ("phi", "i64") in insts and not any(op == "alloca" for op, _ in insts)
    with pytest.raises(ValueError, match="no function"):
        instructions(text, "missing")
    fence = np.full(8, 1e6, np.float32)
    a = np.concatenate([fence, np.arange(1, 6, dtype=np.float32), fence])[8:13]
    b = np.concatenate([fence, np.ones(5, np.float32), np.ones(8, np.float32)])[8:13]
    assert _in_buffer(a)[1] == 8 and _in_buffer(np.ones(3, np.float32))[1] == 0
    assert run_float_function(text, "dot", a, b, 5) == 15.0
    assert run_float_function(text, "dot", a, b, 0) == 0.0
    assert run_float_function(text, "dot", a, b, 6) == 15.0 + 1e6   # the fence past n, read: the test would see it


def test_the_judge_never_runs_it_itself(monkeypatch):
    text = build_into_module(build_dot, "m")["text"]
    monkeypatch.setattr(guards, "IN_JUDGE", True)
    with pytest.raises(HarnessError, match="in the judge"):
        run_float_function(text, "dot", np.ones(2, np.float32), np.ones(2, np.float32), 2)
