from infopt.mlir.bufferize import destination, is_writable_argument


def inplace_decisions(func) -> list[bool]:
    """Counts every later use as a read, a fill's outs included, so some writes copy for nothing."""
    ops = list(func.body.block.ops)
    position = {op: k for k, op in enumerate(ops)}
    buffer = {arg: ("arg", arg.index) for arg in func.body.block.args}
    out = []
    for op in ops:
        dest = destination(op)
        if dest is None:
            for r in op.results:
                buffer[r] = ("op", position[op])
            continue
        home = buffer[dest]
        read_only = home[0] == "arg" and not is_writable_argument(func, func.body.block.args[home[1]])
        living = [v for v, b in buffer.items() if b == home]
        used_later = any(position.get(u.operation, -1) > position[op] for v in living for u in v.uses)
        inplace = not read_only and not used_later
        buffer[op.results[0]] = home if inplace else ("op", position[op])
        out.append(inplace)
    return out
