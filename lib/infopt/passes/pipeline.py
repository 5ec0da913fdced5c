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


def default_pipeline(fuse_elementwise: bool = True, verify: bool = True) -> PassManager:
    """Constant folding, simplification, CSE, DCE, BN folding, Conv fusion, elementwise fusion, DCE."""
    passes = [
        ConstantFolding(), AlgebraicSimplification(), CommonSubexpressionElimination(), DeadCodeElimination(),
        BatchNormFolding(), ConvFusion(),
    ]
    if fuse_elementwise:
        passes.append(ElementwiseFusion())
    passes.append(DeadCodeElimination())
    return PassManager(passes, fixpoint=True, max_iterations=4, verify=verify)


def optimize(graph: Graph, **kwargs) -> PipelineResult:
    """Run ``default_pipeline(**kwargs)`` on ``graph``; returns the result with its statistics."""
    return default_pipeline(**kwargs).run(graph)
