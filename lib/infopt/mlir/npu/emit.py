"""From npu IR to unit 07's command stream: the lowered function is run by xDSL's interpreter, where each npu op
appends its command (with the loop indices and addresses evaluated), then the stream runs on the simulator.

    program = command_stream(module, config=config)          # Program of DMA loads, tile matmuls, stores
    C, stats, program = run_on_npu(module, A, B, config)     # simulated; C equals A @ B

An `npu.matmul`'s attributes are part of the program, not decoration: with a config, the emitter checks each against
the accelerator and the operands before anything runs (`dataflow` is the array's, `dtype` is the operands' element
type, the `tile` [TM, TN, TK] fits the array under that dataflow), and each executed tile's sizes against its `tile`
bounds, so a lowering that writes them wrong fails with a message naming the op and the attribute.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...accel import AccelConfig, AccelError
from . import commands
from .dialect import DmaLoadOp, DmaStoreOp, MatmulOp, element, type_name


def _int(v: Any) -> int:
    return int(v.value.data) if hasattr(v, "value") else int(v)


def check_matmul_attributes(fn: Any, config: AccelConfig) -> None:
    """AccelError naming the op and the attribute when an npu.matmul of `fn` disagrees with `config` or with the
    element type of the function's operands (the first argument is A)."""
    from ...accel.tile import check_tile

    operand = element(fn.body.block.args[0].type) if fn.body.block.args else None
    want = {"int8": "i8", "float32": "f32"}[config.dtype]
    for index, op in enumerate(o for o in fn.walk() if isinstance(o, MatmulOp)):
        where = f"npu.matmul #{index} (in the order the ops are written)"
        if op.dataflow.data != config.dataflow:
            raise AccelError(f"{where}: its dataflow attribute is {op.dataflow.data!r}, but the accelerator runs "
                             f"{config.dataflow!r}; write config.dataflow")
        dtype = type_name(op.dtype)
        if dtype != want or (operand is not None and dtype != operand):
            raise AccelError(f"{where}: its dtype attribute is {dtype}, but the operands are {operand} and the "
                             f"accelerator is configured for {config.dtype} ({want} operands)")
        tm, tn, tk = (int(v) for v in op.tile.get_values())
        check_tile(tm, tn, tk, config, f"{where}: its tile attribute [TM, TN, TK] = [{tm}, {tn}, {tk}]")


def _interpreter_functions(program: Any, names: dict) -> list:
    """xDSL interpreter implementations of the npu ops (appending to `program`) and of arith.minsi."""
    from xdsl.dialects import arith
    from xdsl.interpreter import InterpreterFunctions, impl, register_impls
    from xdsl.interpreters.arith import ArithFunctions
    from xdsl.interpreters.builtin import scalar_attr

    xdsl_arith = ArithFunctions()

    @register_impls
    class NpuFunctions(InterpreterFunctions):
        @impl(DmaLoadOp)
        def run_dma_load(self, interpreter, op, args):
            src, row, col, rows, cols, addr = args
            rep = op.repeat.value.data if op.repeat is not None else 1
            program.append(commands.dma_load(op.buffer.data, _int(addr), names[src], _int(row), _int(col),
                                             _int(rows), _int(cols), rep))
            return ()

        @impl(DmaStoreOp)
        def run_dma_store(self, interpreter, op, args):
            dst, row, col, rows, cols, addr = args
            relu = op.relu is not None and bool(op.relu.value.data)
            program.append(commands.dma_store(_int(addr), names[dst], _int(row), _int(col), _int(rows), _int(cols),
                                              relu))
            return ()

        @impl(MatmulOp)
        def run_matmul(self, interpreter, op, args):
            a, b, c, m, n, k, acc = (_int(x) for x in args)
            bounds = [int(v) for v in op.tile.get_values()]
            for size, value, bound in (("m", m, bounds[0]), ("n", n, bounds[1]), ("k", k, bounds[2])):
                if value < 1:
                    raise AccelError(f"npu.matmul (command {len(program)}): {size} = {value}, an empty tile: a loop "
                                     f"runs past the end of the matrix, or an edge size is computed wrong")
                if value > bound:
                    raise AccelError(f"npu.matmul (command {len(program)}): {size} = {value} is outside 1..{bound}, "
                                     f"its bound in the tile attribute [TM, TN, TK] = {bounds}")
            program.append(commands.tile_matmul(a, b, c, m, n, k, bool(acc)))
            return ()

        @impl(arith.MinSIOp)
        def run_minsi(self, interpreter, op, args):
            return (scalar_attr(min(_int(args[0]), _int(args[1])), op.result.type, interpreter.index_bitwidth),)

    constants: dict[int, tuple] = {}   # id(op) -> (op, its value); holding the op keeps its id its own

    @register_impls
    class CachedConstants(InterpreterFunctions):
        """arith.constant as xDSL runs it, made once per op: a tile loop runs its body's constants thousands of times,
        and xDSL builds a new attribute each time (half of a schedule's simulation)."""

        @impl(arith.ConstantOp)
        def run_constant(self, interpreter, op, args):
            if id(op) not in constants:
                constants[id(op)] = (op, xdsl_arith.run_constant(interpreter, op, args).values)
            return constants[id(op)][1]

    return [NpuFunctions(), CachedConstants()]


def command_stream(module: Any, func: str = "matmul", config: AccelConfig | None = None) -> Any:
    """The command stream the lowered function `func` of `module` issues (its memref arguments are the DRAM tensors
    "A", "B", "C", ... in order); with `config`, each npu.matmul's attributes are checked against it first."""
    from xdsl.interpreter import Interpreter
    from xdsl.interpreters import arith as iarith
    from xdsl.interpreters import func as ifunc
    from xdsl.interpreters import scf as iscf

    fn = next((op for op in module.walk() if op.name == "func.func" and op.sym_name.data == func), None)
    if fn is None:
        raise ValueError(f"the module has no function @{func}")
    args = fn.body.block.args
    tensor_names = [chr(ord("A") + i) for i in range(len(args))]
    program = commands.new_program({n: tuple(a.type.get_shape()) for n, a in zip(tensor_names, args)})
    interp = Interpreter(module)
    for impls in (iscf.ScfFunctions(), iarith.ArithFunctions(), ifunc.FuncFunctions()):
        interp.register_implementations(impls)
    for impls in _interpreter_functions(program, {n: n for n in tensor_names}):
        interp.register_implementations(impls, override=True)   # arith.constant: the cached one
    leftover = [op.name for op in fn.walk() if op.name.startswith("linalg.")]
    if leftover:
        raise AccelError(f"@{func} still holds {leftover}: lower it to npu ops first (lower_to_npu)")
    if config is not None:
        check_matmul_attributes(fn, config)
    interp.call_op(func, tuple(tensor_names))
    return program


def run_on_npu(module: Any, A: np.ndarray, B: np.ndarray, config: AccelConfig, func: str = "matmul"):
    """Run the lowered matmul on the simulator: (C, RunStats, Program)."""
    program = command_stream(module, func, config)
    C = np.zeros((A.shape[0], B.shape[1]), dtype=config.acc_dtype)
    stats = commands.simulate(program, {"A": A, "B": B, "C": C}, config)
    return C, stats, program
