"""Unit 04: MLIR. Our graphs as MLIR (`emit`), progressive lowering with mlir-opt-19 stages (`pipeline`), running the
result (`execute`), a tiled matmul schedule (`matmul`), bufferization (`bufferize`), affine analysis (`affine`),
a custom npu dialect in xDSL lowered to unit 07's accelerator (`npu`), its ODS twin (`ods`), MLIR's Toy tutorial in
xDSL (`toy`) and IREE (`iree`). The MLIR tools are found by `tools`.

Nothing heavy is imported here: import the submodule you need (xdsl and iree load with `npu`, `toy`, `iree`).
"""
