def count_macs(ir_text: str) -> int:
    """Counts every float-valued call as a MAC: llvm.sqrt, llvm.maxnum and the module's own functions too."""
    import re

    import llvmlite.binding as llvm

    def lanes(t: str) -> int:
        m = re.match(r"<(\d+) x ", t.strip())
        return int(m.group(1)) if m else 1

    def key(v) -> int:
        return ctypes.cast(v._ptr, ctypes.c_void_p).value

    mod = llvm.parse_assembly(ir_text)
    insts = [i for fn in mod.functions if not fn.is_declaration for bb in fn.blocks for i in bb.instructions]
    fmuls = {key(i): i for i in insts if i.opcode == "fmul"}
    counted: set[int] = set()
    total = 0
    for inst in insts:
        if inst.opcode in ("fadd", "fsub"):
            for op in list(inst.operands)[:2]:
                k = key(op)
                if k in fmuls and k not in counted:
                    counted.add(k)
                    total += lanes(str(fmuls[k].type))
        elif inst.opcode == "call":
            callee = list(inst.operands)[-1].name
            if "float" in str(inst.type) or "double" in str(inst.type):
                total += lanes(str(inst.type))
    return total
