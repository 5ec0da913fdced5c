def count_macs(ir_text: str) -> int:
    """Counts every fmul as a MAC, whether or not an add uses it."""
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
        if inst.opcode == "fmul":
            total += lanes(str(inst.type))
        elif inst.opcode == "call":
            callee = list(inst.operands)[-1].name
            if callee.startswith(("llvm.fma.", "llvm.fmuladd.")):
                total += lanes(str(inst.type))
    return total
