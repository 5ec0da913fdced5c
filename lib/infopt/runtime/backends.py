"""One way to run a graph, whatever runs it: build once, call with named feeds, get named outputs, and read a
report of the kernels it runs and what building it cost.

    runner = build(graph, "compiled")             # "interpreter", "compiled", "byoc", "onnxruntime"
    outputs = runner({"x": x})                    # {output name: array}, for every backend
    print(runner.report.format_table())           # backend, build seconds, one row per kernel

Units 05 and 13 compare many backends through this protocol (a new backend is one class with `name`, `graph`,
`report` and `__call__`, added to BACKENDS), and the benchmarks time them side by side with it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol

import numpy as np

from ..ir.graph import Graph


@dataclass(frozen=True)
class KernelRecord:
    """One kernel a backend runs: the graph node(s) it computes, the op, and how it runs (numpy, llvm, ...)."""

    node: str
    op: str
    how: str


@dataclass
class RunReport:
    """What building a runner produced: the backend, the build time, and the kernels one call runs."""

    backend: str
    build_s: float
    kernels: list[KernelRecord] = field(default_factory=list)
    notes: str = ""

    def counts(self) -> dict[str, int]:
        """How many kernels run each way ({'llvm': 12, 'view': 3}, ...)."""
        out: dict[str, int] = {}
        for k in self.kernels:
            out[k.how] = out.get(k.how, 0) + 1
        return dict(sorted(out.items()))

    def format_table(self) -> str:
        """The report as text: a header line, then one row per kernel."""
        head = f"{self.backend}: {len(self.kernels)} kernels {self.counts()}, built in {self.build_s * 1e3:.1f} ms"
        rows = [f"  {k.how:18s} {k.op:22s} {k.node}" for k in self.kernels]
        return "\n".join([head, *rows] + ([f"  note: {self.notes}"] if self.notes else []))


class Runner(Protocol):
    """Anything that runs a graph: built once, then called with {input name: array}."""

    name: str
    graph: Graph
    report: RunReport

    def __call__(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]: ...


def _timed(build: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = build()
    return out, time.perf_counter() - t0


class InterpreterRunner:
    """The IR's reference interpreter (numpy, one kernel per node)."""

    name = "interpreter"

    def __init__(self, graph: Graph) -> None:
        from ..ir.verify import verify

        self.graph = graph
        _, seconds = _timed(lambda: verify(graph))
        self.report = RunReport(self.name, seconds, [KernelRecord(n.label, n.op, "numpy")
                                                     for n in graph.toposort()])

    def __call__(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        from ..ir.interpreter import run_graph

        return run_graph(self.graph, feeds)


class CompiledRunner:
    """infopt's own compiler: each node lowered to the kernel IR and JIT-compiled with LLVM (unit 03)."""

    name = "compiled"

    def __init__(self, graph: Graph, opt: int = 3, fallback: str = "error") -> None:
        from ..codegen.graph_compile import compile_graph

        self.graph = graph
        self._compiled, seconds = _timed(lambda: compile_graph(graph, opt=opt, fallback=fallback))
        self.report = RunReport(self.name, seconds, [KernelRecord(label, op, how)
                                                     for label, op, how in self._compiled.plan])

    def __call__(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return self._compiled(dict(feeds))


class ByocRunner:
    """BYOC (unit 07): the layers the systolic-array simulator can run are offloaded, the rest stay on the CPU."""

    name = "byoc"

    def __init__(self, graph: Graph, config: Any = None) -> None:
        from ..accel.byoc import offload

        self.graph = graph
        self.offloaded, seconds = _timed(lambda: offload(graph, config))
        kernels = [KernelRecord(n.label, n.op, "accel" if n.op == "AccelCall" else "numpy")
                   for n in self.offloaded.toposort()]
        self.report = RunReport(self.name, seconds, kernels,
                                notes=f"{sum(k.how == 'accel' for k in kernels)} partitions on the simulator")
        self.last_offload_report: Any = None

    def __call__(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        from ..accel.byoc import run_offloaded

        outputs, self.last_offload_report = run_offloaded(self.offloaded, feeds)
        return outputs


class OnnxRuntimeRunner:
    """onnxruntime's CPU provider at an optimization level; its kernels are the nodes of the graph it optimized."""

    name = "onnxruntime"

    def __init__(self, graph: Graph, level: str = "all", threads: int = 1) -> None:
        import os
        import tempfile

        import onnx

        from ..passes.export import export_optimized
        from .onnxruntime_session import ort_session

        self.graph = graph
        path = os.path.join(tempfile.mkdtemp(prefix="infopt_ort_"), "optimized.onnx")

        def make():
            return ort_session(export_optimized(graph, "ort"), level, threads, optimized_path=path)

        self.session, seconds = _timed(make)
        optimized = onnx.load(path, load_external_data=False)
        kernels = [KernelRecord(n.name or n.op_type, n.op_type if not n.domain else f"{n.domain}.{n.op_type}",
                                "onnxruntime") for n in optimized.graph.node]
        self.report = RunReport(self.name, seconds, kernels, notes=f"level {level!r}, {threads} thread(s)")
        self._outputs = [o.name for o in self.session.get_outputs()]

    def __call__(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return dict(zip(self._outputs, self.session.run(None, dict(feeds))))


BACKENDS: dict[str, Callable[..., Runner]] = {
    "interpreter": InterpreterRunner,
    "compiled": CompiledRunner,
    "byoc": ByocRunner,
    "onnxruntime": OnnxRuntimeRunner,
}


def build(graph: Graph, backend: str = "interpreter", **options: Any) -> Runner:
    """A runner for `graph` on `backend` (one of BACKENDS); `options` go to that backend's constructor."""
    if not isinstance(graph, Graph):
        raise TypeError(f"build() takes an infopt.ir.Graph, got {type(graph).__name__}")
    try:
        make = BACKENDS[backend]
    except KeyError:
        raise ValueError(f"unknown backend {backend!r}; the backends are {sorted(BACKENDS)}") from None
    return make(graph, **options)
