"""LLVM IR analyses: MAC counting (fmul->fadd, fma, fmuladd, per lane), memory ops, vectorization, mix."""
import numpy as np
import pytest

from infopt.codegen import Assign, Buffer, Kernel, Store, Var, loop
from infopt.codegen.analysis import count_fmas, count_memory, flop_estimate, instruction_mix, vectorization
from infopt.codegen.emit import emit_llvm
from infopt.codegen.llvm_jit import optimize

rng = np.random.default_rng()


def _random_function(n_pairs, n_fma, n_fmuladd, width, n_plain):
    """A function with known MAC content; returns (ir, expected MACs, expected FLOPs)."""
    t = f"<{width} x float>" if width > 1 else "float"
    lines, decls = [], set()
    k = 0
    for _ in range(n_pairs):
        lines += [f"  %m{k} = fmul {t} %a, %b", f"  %s{k} = fadd {t} %m{k}, %a"]
        k += 1
    sfx = f"v{width}f32" if width > 1 else "f32"
    for _ in range(n_fma):
        lines.append(f"  %f{k} = call {t} @llvm.fma.{sfx}({t} %a, {t} %b, {t} %a)")
        decls.add(f"declare {t} @llvm.fma.{sfx}({t}, {t}, {t})")
        k += 1
    for _ in range(n_fmuladd):
        lines.append(f"  %g{k} = call {t} @llvm.fmuladd.{sfx}({t} %a, {t} %b, {t} %a)")
        decls.add(f"declare {t} @llvm.fmuladd.{sfx}({t}, {t}, {t})")
        k += 1
    for _ in range(n_plain):  # an fmul nobody adds to, and an fadd of two arguments: no MAC
        lines += [f"  %p{k} = fmul {t} %a, %a", f"  %q{k} = fadd {t} %b, %b"]
        k += 1
    ir = f"define void @h({t} %a, {t} %b) {{\n" + "\n".join(lines) + "\n  ret void\n}\n" + "\n".join(sorted(decls))
    macs = width * (n_pairs + n_fma + n_fmuladd)
    flops = width * (2 * n_pairs + 2 * n_fma + 2 * n_fmuladd + 2 * n_plain)
    return ir, macs, flops


@pytest.mark.parametrize("trial", range(4))
def test_count_fmas_on_random_functions(trial):
    counts = [int(v) for v in rng.integers(0, 5, 4)]
    width = int(rng.choice([1, 4, 8]))
    ir, macs, flops = _random_function(*counts[:3], width, counts[3])
    assert count_fmas(ir) == macs
    assert flop_estimate(ir) == flops


def test_memory_and_vectorization_of_an_optimized_kernel():
    n = 1024
    X, Y = Buffer("X", (n,)), Buffer("Y", (n,), role="out")
    i = Var("i")
    k = Kernel("scale", (X, Y), [loop(i, n, body=[Store(Y, (i,), X[i] * 3.0)])])
    raw = emit_llvm(k)
    assert count_memory(raw) == {"loads": 1, "stores": 1, "load_lanes": 1, "store_lanes": 1}
    assert not vectorization(raw)["vectorized"]
    o3 = optimize(raw, 3)
    v = vectorization(o3)
    assert v["vectorized"] and v["max_width"] >= 4
    assert count_memory(o3)["load_lanes"] >= 4
    assert not vectorization(optimize(raw, 3, loop_vectorize=False, slp_vectorize=False))["vectorized"]


def test_instruction_mix_names_calls_by_callee():
    ir, _, _ = _random_function(1, 2, 0, 8, 0)
    mix = instruction_mix(ir)
    assert mix["call llvm.fma.v8f32"] == 2 and mix["fmul"] == 1 and mix["ret"] == 1


def test_dot_product_kernel_has_macs_after_o3():
    n = 256
    A, B, out = Buffer("A", (n,)), Buffer("B", (n,)), Buffer("out", (1,), role="out")
    i, acc = Var("i"), Var("acc", "f32")
    k = Kernel("dot", (A, B, out), [Assign(acc, 0.0), loop(i, n, body=[Assign(acc, acc + A[i] * B[i])]),
                                    Store(out, (0,), acc)])
    assert count_fmas(emit_llvm(k)) == 1
    assert count_fmas(optimize(emit_llvm(k), 3)) >= 1
