from infopt.mlir.bufferize import destination, is_writable_argument


def inplace_decisions(func) -> list[bool]:
    """Tracks later reads correctly but writes into any buffer, the caller's read-only ones included."""
    ops = list(func.body.block.ops)
    position = {op: k for k, op in enumerate(ops)}
    buffer = {arg: ("arg", arg.index) for arg in func.body.block.args}

    def is_read(use) -> bool:
        op = use.operation
        if op.name == "linalg.fill":
            return False
        if op.name == "linalg.generic" and use.index >= len(op.inputs):
            return bool(op.body.block.args[use.index].uses)
        return True

    out = []
    for op in ops:
        dest = destination(op)
        if dest is None:
            for r in op.results:
                buffer[r] = ("op", position[op])
            continue
        home = buffer[dest]
        living = [v for v, b in buffer.items() if b == home]
        inplace = not any(is_read(u) and position.get(u.operation, -1) > position[op] for v in living for u in v.uses)
        buffer[op.results[0]] = home if inplace else ("op", position[op])
        out.append(inplace)
    return out
