from infopt.mlir.bufferize import destination, is_writable_argument


def inplace_decisions(func) -> list[bool]:
    """Looks only at later reads of the destination value itself, not of the other values living in its buffer."""
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
        read_only = home[0] == "arg" and not is_writable_argument(func, func.body.block.args[home[1]])
        read_later = any(is_read(u) and position.get(u.operation, -1) > position[op] for u in dest.uses)
        inplace = not read_only and not read_later
        buffer[op.results[0]] = home if inplace else ("op", position[op])
        out.append(inplace)
    return out
