"""Unit 02: graph-to-graph optimization passes, the pass manager, fusion, layout and memory planning.

A pass is ``Pass.run(graph) -> PassResult(graph, changed, stats, reason)``; ``PassManager`` runs a list
of them (in order or to a fixpoint), verifies after each and records statistics. The ops the passes create
(FusedConv, FusedElementwise, ConvNHWC, NchwcConv...) are defined in ``infopt.ir.ops`` with all the others.
"""
from .base import (FunctionPass, Pass, PassError, PassManager, PassRecord, PassResult, PassSkipped,
                   PipelineResult, graph_signature, run_passes)
from .bn_fold import BatchNormFolding, bn_scale_shift, fold_batchnorm, fold_bn_into_conv
from .cse import CommonSubexpressionElimination, cse_key
from .dce import DeadCodeElimination, live_nodes
from .fold import ConstantFolding
from .fusion import ConvFusion, ElementwiseFusion
from .horizontal import HorizontalFusion
from .inplace import inplace_candidates
from .layout import ToNHWC, TransposeSinking
from .nchwc import ToNCHWc
from .memory import (Interval, MemoryPlan, check_plan, liveness, lower_bound_bytes, no_reuse_bytes, plan_memory,
                     plan_peak)
from .pipeline import default_pipeline, optimize
from .simplify import AlgebraicSimplification

__all__ = [
    "AlgebraicSimplification", "BatchNormFolding", "CommonSubexpressionElimination", "ConstantFolding",
    "ConvFusion", "DeadCodeElimination", "ElementwiseFusion", "FunctionPass", "HorizontalFusion", "Interval", "MemoryPlan", "Pass",
    "PassError", "PassManager", "PassRecord", "PassResult", "PassSkipped", "PipelineResult", "ToNCHWc", "ToNHWC", "TransposeSinking", "bn_scale_shift",
    "check_plan", "cse_key", "default_pipeline", "fold_batchnorm", "fold_bn_into_conv", "graph_signature",
    "inplace_candidates", "live_nodes", "liveness", "lower_bound_bytes", "no_reuse_bytes", "optimize",
    "plan_memory", "plan_peak", "run_passes",
]
