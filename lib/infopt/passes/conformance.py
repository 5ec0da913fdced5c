"""ONNX's own node tests, run through the IR: import, the interpreter, the default pipeline and export.

onnx's wheel ships no ``data/node`` folder, but its case definitions (``onnx.backend.test.case.node``, each an
``expect(node, inputs, outputs)`` call) build the cases in memory when their modules are imported. For every case
whose op the registry claims, ``run_case``:

1. imports the model natively at its opset (inputs that feed a shape-like input, such as Reshape's ``shape``,
   become constants: the IR's shapes are static);
2. runs it with the interpreter and compares with the expected outputs (ONNX's tolerances: rtol 1e-3,
   atol 1e-7; bfloat16 two ULPs), then the same after ``default_pipeline()``;
3. exports the optimized graph (fused ops written as standard ones) at the model's opset, checks it with
   onnx's full checker, imports it back and compares again;
4. exports the imported graph as it is and checks the round trip is lossless (``graph_diff`` is empty);
5. imports it once more with every input a constant, so the pipeline's constant folding computes the case.

A case an op cannot honour (training-mode Dropout, dtypes outside the IR such as float8 or strings, sequence
inputs) must fail with the clear error ``DECLINE_REASONS`` lists; it is then "declined", not failed.
"""
from __future__ import annotations

import importlib
import re
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from ..ir.graph import Graph
from ..ir.ops import OPS
from ..ir.verify import graph_diff

# The errors with which an op says it cannot honour a case, by kind (regexes over the error message).
DECLINE_REASONS: dict[str, str] = {
    "dtype outside the IR": r"ONNX element type \w+ is not supported by the infopt IR",
    "training mode": r"training_mode=(True|1) is not supported: the infopt IR runs inference only",
    "not a tensor": r"is (a|an) [\w ]+, not a tensor; the infopt IR holds tensors only",
    "opset before 13": r"opset \d+ is outside the opsets the infopt IR reads and writes",
    "string constant": r"Constant: attribute value_strings? is not supported",
}
_MODULE_NAMES = {"BatchNormalization": "batch_normalization", "Less": "less", "Sum": "sum", "Size": "size"}


@dataclass
class CaseResult:
    """One node test case: its name, the op it tests, "passed" / "failed" / "declined", and why (if not passed)."""

    name: str
    op: str
    status: str
    detail: str = ""
    seconds: float = 0.0
    expanded: bool = False


@dataclass
class NodeTestReport:
    """The results of a node-test run, with the per-op summary the tests and the benchmark print."""

    results: list[CaseResult] = field(default_factory=list)

    def by_op(self) -> dict[str, dict[str, int]]:
        """op -> {"cases", "passed", "declined", "failed"}."""
        rows: dict[str, dict[str, int]] = {}
        for r in self.results:
            row = rows.setdefault(r.op, {"cases": 0, "passed": 0, "declined": 0, "failed": 0})
            row["cases"] += 1
            row[r.status] += 1
        return dict(sorted(rows.items()))

    @property
    def failed(self) -> list[CaseResult]:
        return [r for r in self.results if r.status == "failed"]

    @property
    def pass_rate(self) -> float:
        """Passed cases over the cases the IR does not decline."""
        honoured = [r for r in self.results if r.status != "declined"]
        return sum(r.status == "passed" for r in honoured) / max(1, len(honoured))

    def table(self) -> str:
        """The summary: op, cases, passed, declined, failed; totals last."""
        rows = self.by_op()
        lines = [f"{'op':<22}{'cases':>7}{'passed':>8}{'declined':>10}{'failed':>8}"]
        for op, r in rows.items():
            lines.append(f"{op:<22}{r['cases']:>7}{r['passed']:>8}{r['declined']:>10}{r['failed']:>8}")
        tot = {k: sum(r[k] for r in rows.values()) for k in ("cases", "passed", "declined", "failed")}
        lines.append(f"{'total':<22}{tot['cases']:>7}{tot['passed']:>8}{tot['declined']:>10}{tot['failed']:>8}")
        return "\n".join(lines)


def _module_candidates(op: str) -> list[str]:
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", op).lower()
    return list(dict.fromkeys([_MODULE_NAMES.get(op, op.lower()), op.lower(), snake]))


def claimed_ops() -> list[str]:
    """The standard ONNX ops the registry defines (the ones whose node tests must pass)."""
    return sorted(k for k, v in OPS.items() if v.domain == "")


def collect_cases(ops: Iterable[str] | None = None) -> list[tuple[Any, str, bool]]:
    """(onnx TestCase, the op it tests, whether it is an expanded function body) for the cases of ``ops``.

    Only the case modules of those ops are imported (building all 1,900 of onnx's cases takes ~10 s). Expanded
    cases (the op's ONNX function body) count only when the registry claims every op of the body."""
    import onnx.backend.test.case.node as node_cases

    ops = set(claimed_ops() if ops is None else ops)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for op in sorted(ops):
            for mod in _module_candidates(op):
                try:
                    importlib.import_module(f"onnx.backend.test.case.node.{mod}")
                    break
                except ModuleNotFoundError:
                    continue
    cases = list(node_cases._NodeTestCases)  # noqa: SLF001  (onnx's registry of built cases)
    op_of: dict[str, str] = {}
    for c in cases:
        if "_expanded" not in c.name and len(c.model.graph.node) == 1:
            op_of[c.name] = c.model.graph.node[0].op_type
    out = []
    for c in cases:
        base = c.name.split("_expanded")[0]
        op = op_of.get(base)
        if op is None or op not in ops:
            continue
        expanded = "_expanded" in c.name
        if expanded and not {n.op_type for n in c.model.graph.node} <= set(OPS):
            continue
        out.append((c, op, expanded))
    return out


def _array(v: Any) -> np.ndarray:
    from onnx import TensorProto, numpy_helper

    return numpy_helper.to_array(v) if isinstance(v, TensorProto) else np.asarray(v)


def case_io(case: Any) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """A case's feeds and expected outputs, by graph input / output name, as numpy arrays."""
    (inputs, outputs), = case.data_sets
    feeds = {vi.name: _array(a) for vi, a in zip(case.model.graph.input, inputs)}
    return feeds, {vi.name: _array(a) for vi, a in zip(case.model.graph.output, outputs)}


def _bake_shape_inputs(model: Any, feeds: dict[str, np.ndarray], every: bool = False
                       ) -> tuple[Any, dict[str, np.ndarray]]:
    """The model with every graph input that feeds a shape-like input (an op's ``const_inputs``) made a constant
    (with ``every``, all graph inputs)."""
    import onnx
    from onnx import numpy_helper

    const = set(feeds) if every else set()
    for n in model.graph.node:
        opdef = OPS.get(n.op_type)
        if opdef is not None:
            const.update(v for k, v in enumerate(n.input) if k in opdef.const_inputs and v in feeds)
    if not const:
        return model, feeds
    m = onnx.ModelProto()
    m.CopyFrom(model)
    keep = [vi for vi in m.graph.input if vi.name not in const]
    del m.graph.input[:]
    m.graph.input.extend(keep)
    m.graph.initializer.extend(numpy_helper.from_array(feeds[v], v) for v in sorted(const))
    return m, {k: v for k, v in feeds.items() if k not in const}


def _compare(got: dict[str, np.ndarray], expected: dict[str, np.ndarray], rtol: float, atol: float, stage: str) -> None:
    for name, ref in expected.items():
        out = got[name]
        if out.shape != ref.shape or out.dtype != ref.dtype:
            raise AssertionError(f"{stage}: output {name} is {out.dtype}{list(out.shape)}, expected "
                                 f"{ref.dtype}{list(ref.shape)}")
        if ref.dtype.kind in "biu":
            if not np.array_equal(out, ref):
                bad = np.argwhere(out != ref)[:3].tolist()
                raise AssertionError(f"{stage}: output {name} differs at {bad}")
            continue
        tol = max(rtol, 2.0**-6) if ref.dtype.name == "bfloat16" else rtol
        o, r = out.astype(np.float64), ref.astype(np.float64)
        if not np.allclose(o, r, rtol=tol, atol=atol, equal_nan=True):
            err = np.abs(o - r) / np.maximum(np.abs(r), atol)
            raise AssertionError(f"{stage}: output {name} differs (max relative error {np.nanmax(err):.3g}, "
                                 f"tolerance rtol={tol}, atol={atol})")


def _declined(message: str) -> str | None:
    return next((kind for kind, rx in DECLINE_REASONS.items() if re.search(rx, message)), None)


def run_case(case: Any, op: str, expanded: bool = False) -> CaseResult:
    """Run one onnx node test case through import, interpreter, pipeline and export (see the module docstring)."""
    from ..ir.interpreter import run_graph
    from ..ir.onnx_io import from_onnx, to_onnx
    from .export import export_optimized
    from .pipeline import default_pipeline

    t0 = time.perf_counter()
    model = case.model
    feeds, expected = case_io(case)
    stage = "import"
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            model, feeds = _bake_shape_inputs(model, feeds)
            g = from_onnx(model)
            stage = "interpreter"
            _compare(run_graph(g, feeds), expected, case.rtol, case.atol, stage)
            stage = "default pipeline"
            opt = default_pipeline().run(g).graph
            _compare(run_graph(opt, feeds), expected, case.rtol, case.atol, stage)
            stage = "export of the optimized graph"
            back = from_onnx(export_optimized(opt, target="onnx"))
            _compare(run_graph(back, feeds), expected, case.rtol, case.atol, stage)
            stage = f"round trip at opset {g.opset}"
            diffs = graph_diff(from_onnx(to_onnx(g)), g)
            if diffs:
                raise AssertionError(f"{stage}: the re-imported graph differs: {'; '.join(diffs[:3])}")
            stage = "constant folding"
            folded = default_pipeline().run(from_onnx(_bake_shape_inputs(model, feeds, every=True)[0])).graph
            _compare(run_graph(folded, {}), expected, case.rtol, case.atol, stage)
    except Exception as e:  # a case reports every failure; the caller decides
        msg = f"{type(e).__name__} at {stage}: {e}"
        kind = _declined(str(e)) if stage == "import" else None
        status = "declined" if kind else "failed"
        return CaseResult(case.name, op, status, f"{kind}: {msg}" if kind else msg, time.perf_counter() - t0,
                          expanded)
    return CaseResult(case.name, op, "passed", "", time.perf_counter() - t0, expanded)


def run_node_tests(ops: Sequence[str] | None = None) -> NodeTestReport:
    """Run every node test case of ``ops`` (default: every standard op the registry claims)."""
    return NodeTestReport([run_case(c, op, exp) for c, op, exp in collect_cases(ops)])


def graph_of_case(case: Any) -> Graph:
    """The imported graph of one case (shape-like inputs made constants), for looking at a failure."""
    from ..ir.onnx_io import from_onnx

    return from_onnx(_bake_shape_inputs(case.model, case_io(case)[0])[0])
