def count_macs(ir_text: str) -> int:
    """One pass in layout order: an add is matched only with fmuls already seen, so an fmul whose block is laid out
    after the add's block is missed."""
    import re

    import llvmlite.binding as llvm

    def lanes(t: str) -> int:
        m = re.match(r"<(\d+) x ", t.strip())
        return int(m.group(1)) if m else 1

    def key(v) -> int:
        return ctypes.cast(v._ptr, ctypes.c_void_p).value

    mod = llvm.parse_assembly(ir_text)
    fmuls: dict[int, object] = {}
    counted: set[int] = set()
    total = 0
    for fn in mod.functions:
        if fn.is_declaration:
            continue
        for bb in fn.blocks:
            for inst in bb.instructions:
                if inst.opcode == "fmul":
                    fmuls[key(inst)] = inst
                elif inst.opcode in ("fadd", "fsub"):
                    for op in list(inst.operands)[:2]:
                        k = key(op)
                        if k in fmuls and k not in counted:
                            counted.add(k)
                            total += lanes(str(fmuls[k].type))
                elif inst.opcode == "call":
                    callee = list(inst.operands)[-1].name
                    if callee.startswith(("llvm.fma.", "llvm.fmuladd.")):
                        total += lanes(str(inst.type))
    return total
