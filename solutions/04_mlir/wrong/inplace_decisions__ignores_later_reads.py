from infopt.mlir.bufferize import destination, is_writable_argument


def inplace_decisions(func) -> list[bool]:
    """Only protects read-only arguments: every other write goes in place, even when the old value is read later."""
    ops = list(func.body.block.ops)
    buffer = {arg: arg for arg in func.body.block.args}
    out = []
    for op in ops:
        dest = destination(op)
        if dest is None:
            for r in op.results:
                buffer[r] = r
            continue
        home = buffer[dest]
        inplace = not (home in func.body.block.args and not is_writable_argument(func, home))
        buffer[op.results[0]] = home if inplace else op.results[0]
        out.append(inplace)
    return out
