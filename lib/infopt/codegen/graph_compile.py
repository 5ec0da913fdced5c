"""``compile_graph(graph)``: lower every node to a kernel, JIT them, and run the graph as one callable.

Compute nodes become LLVM kernels (one per node; a ``FusedElementwise`` node of unit 02 is one
loop nest). Shape-only ops (Reshape, Flatten, Squeeze, Unsqueeze, Identity) are free: they reuse
the array as a numpy view. Any other op raises ``UnsupportedLoweringError`` naming it, unless
``fallback="numpy"`` asks to run it with the op registry's reference kernel (listed in ``plan``).
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..ir.graph import Graph, Node
from ..ir.types import DTYPES
from .compiled import CompiledKernel, compile_kernel
from .kernel_ir import Kernel
from .lower_elementwise import UnsupportedLoweringError
from .lower_linalg import lower_conv, lower_gemm, lower_matmul
from .lowerings import FLOATS, LOWERINGS, lowering

VIEW_OPS = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity")
lowering("MatMul", dtypes=FLOATS)(lower_matmul)
lowering("Gemm", dtypes=FLOATS)(lower_gemm)
lowering("Conv", dtypes=FLOATS)(lower_conv)


def lower_node(graph: Graph, node: Node) -> Kernel:
    """The kernel for one graph node, or UnsupportedLoweringError naming the node and what is lowerable."""
    fn = LOWERINGS.get(node.op)
    if fn is None:
        raise UnsupportedLoweringError(
            f"node {node.label}: op {node.op} has no kernel-IR lowering; lowerable ops: {', '.join(sorted(LOWERINGS))} "
            f"(and view ops {', '.join(VIEW_OPS)}). Use compile_graph(..., fallback='numpy') to run it with numpy.")
    why = fn.accepts(graph, node) if hasattr(fn, "accepts") else None
    if why:
        raise UnsupportedLoweringError(
            f"node {node.label}: {node.op} is not lowered: {why}. Use compile_graph(..., fallback='numpy') to run it "
            "with numpy.")
    try:
        return fn(graph, node)
    except UnsupportedLoweringError as e:
        raise UnsupportedLoweringError(f"node {node.label}: {e}") from None


class CompiledGraph:
    """A graph whose nodes run as JIT-compiled kernels; call it with the graph inputs, get a dict of outputs."""

    def __init__(self, graph: Graph, opt: int = 3, fallback: str = "error") -> None:
        if fallback not in ("error", "numpy"):
            raise ValueError(f"fallback must be 'error' or 'numpy', got {fallback!r}")
        self.graph = graph
        self.steps: list[tuple[Node, Any]] = []
        self.plan: list[tuple[str, str, str]] = []  # (node label, op, how it runs)
        for node in graph.toposort():
            if node.op in VIEW_OPS:
                self.steps.append((node, "view"))
                self.plan.append((node.label, node.op, "view"))
                continue
            try:
                ck = compile_kernel(lower_node(graph, node), opt)
            except UnsupportedLoweringError:
                if fallback == "error":
                    raise
                self.steps.append((node, "numpy"))
                self.plan.append((node.label, node.op, "numpy"))
                continue
            self.steps.append((node, ck))
            self.plan.append((node.label, node.op, "llvm"))

    @property
    def kernels(self) -> list[CompiledKernel]:
        """The compiled kernels, in execution order."""
        return [s for _, s in self.steps if isinstance(s, CompiledKernel)]

    def __call__(self, feeds: Mapping[str, np.ndarray] | None = None, *args: np.ndarray) -> dict[str, np.ndarray]:
        """Run on ``feeds`` (a dict by input name, or the inputs positionally); returns {output name: array}."""
        g = self.graph
        if feeds is not None and not isinstance(feeds, Mapping):
            args = (feeds,) + args
            feeds = None
        if feeds is None:
            if len(args) != len(g.inputs):
                raise TypeError(f"graph {g.name} takes {len(g.inputs)} inputs ({g.inputs}), got {len(args)}")
            feeds = dict(zip(g.inputs, args))
        missing = [i for i in g.inputs if i not in feeds]
        if missing:
            raise KeyError(f"graph {g.name}: no value fed for inputs {missing}")
        env: dict[str, np.ndarray] = {}
        for name in g.inputs:
            t = g.type_of(name)
            a = np.require(feeds[name], t.numpy_dtype, "C")
            if a.shape != t.shape:
                raise ValueError(f"graph {g.name}: input {name} must have shape {t.shape}, got {a.shape}")
            env[name] = a
        for k, v in g.initializers.items():
            env[k] = np.require(v, requirements="C")  # (ascontiguousarray would make 0-d arrays 1-d)
        for node, how in self.steps:
            ins = [env[i] if i else None for i in node.inputs]
            if how == "view":
                out_t = g.type_of(node.outputs[0])
                env[node.outputs[0]] = ins[0].reshape(out_t.shape)
            elif how == "numpy":
                from ..ir.ops import get_op

                for o, v in zip(node.outputs, get_op(node.op, node).compute(ins, node.attrs)):
                    env[o] = np.require(v, requirements="C")
            else:
                outs = [np.empty(g.type_of(o).shape, DTYPES[g.type_of(o).dtype]) for o in node.outputs]
                present = [a for a in ins if a is not None]
                # buffer in<k> is the node's k-th present input, out<k> its k-th output
                how(*[present[int(b.name[2:])] if b.name.startswith("in") else outs[int(b.name[3:])]
                      for b in how.user_buffers])
                env.update(zip(node.outputs, outs))
        return {o: env[o] for o in g.outputs}


def compile_graph(graph: Graph, opt: int = 3, fallback: str = "error") -> CompiledGraph:
    """Compile a whole graph node by node; the result matches the interpreter's outputs."""
    return CompiledGraph(graph, opt, fallback)


compile = compile_graph  # the name the course uses: infopt.codegen.compile(graph)
