"""A custom `npu` dialect for unit 07's systolic array, in xDSL: its ops and verifiers (`dialect`), a builder
(`build`), the `linalg.matmul` -> npu tiling lowering (`lower`), the emitter to the accelerator's command stream and
its simulator (`emit`), and the one adapter onto `infopt.accel` (`commands`). Importing this imports xdsl."""
from .dialect import NPU, DmaLoadOp, DmaStoreOp, MatmulOp
from .emit import command_stream, run_on_npu
from .lower import LowerMatmulToNpu, emit_matmul_schedule, lower_to_npu
from .source import matmul_module

__all__ = ["NPU", "DmaLoadOp", "DmaStoreOp", "LowerMatmulToNpu", "MatmulOp", "command_stream",
           "emit_matmul_schedule", "lower_to_npu", "matmul_module", "run_on_npu"]
