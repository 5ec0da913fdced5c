def emit_npu_schedule(nb: NpuBuilder, A, B, C, config: AccelConfig) -> None:
    """Calls the library's schedule instead of writing it."""
    from infopt.mlir.npu.lower import emit_matmul_schedule

    emit_matmul_schedule(nb, A, B, C, config)
