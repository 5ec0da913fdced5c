from infopt.mlir.bufferize import destination, is_writable_argument


def inplace_decisions(func) -> list[bool]:
    """Plays it safe: every write gets a new buffer (correct values, but copies one-shot bufferization avoids)."""
    return [False for op in func.body.block.ops if destination(op) is not None]
