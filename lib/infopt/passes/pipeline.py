"""The default optimization pipeline: cleanup to a fixpoint, then BN folding and fusion, then cleanup."""
from __future__ import annotations

from ..ir.graph import Graph
from .base import PassManager, PipelineResult
from .bn_fold import BatchNormFolding
from .cse import CommonSubexpressionElimination
from .dce import DeadCodeElimination
from .fold import ConstantFolding
from .fusion import ConvFusion, ElementwiseFusion
from .simplify import AlgebraicSimplification


def default_pipeline(fuse_elementwise: bool = True, verify: bool = True, nchwc: bool = False) -> PassManager:
    """Constant folding, simplification, CSE, DCE, BN folding, Conv fusion, elementwise fusion, DCE;
    with ``nchwc=True`` also the blocked-layout rewrite for onnxruntime's NCHWc kernels (ToNCHWc) at the end."""
    passes = [
        ConstantFolding(), AlgebraicSimplification(), CommonSubexpressionElimination(), DeadCodeElimination(),
        BatchNormFolding(), ConvFusion(),
    ]
    if fuse_elementwise:
        passes.append(ElementwiseFusion())
    passes.append(DeadCodeElimination())
    pm = PassManager(passes, fixpoint=True, max_iterations=4, verify=verify)
    if nchwc:
        from .nchwc import ToNCHWc

        return _Then(pm, PassManager([ToNCHWc()], verify=verify))
    return pm


class _Then(PassManager):
    """Two pass managers one after the other (the second runs once, after the first's fixpoint)."""

    def __init__(self, first: PassManager, second: PassManager) -> None:
        super().__init__(first.passes + second.passes, verify=first.verify)
        self.first, self.second = first, second

    def run(self, graph: Graph, snapshots: bool = False) -> PipelineResult:
        """Run the first manager, then the second on its result; records and snapshots concatenated."""
        a = self.first.run(graph, snapshots)
        b = self.second.run(a.graph, snapshots)
        return PipelineResult(b.graph, a.records + b.records, a.snapshots + b.snapshots[1:])


def optimize(graph: Graph, **kwargs) -> PipelineResult:
    """Run ``default_pipeline(**kwargs)`` on ``graph``; returns the result with its statistics."""
    return default_pipeline(**kwargs).run(graph)
