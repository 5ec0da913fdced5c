def count_macs(ir_text: str) -> int:
    """Reads the lane count as the one digit after '<': right for <8 x float>, 1 for <16 x float>."""
    import re

    import llvmlite.binding as llvm

    def lanes(t: str) -> int:
        t = t.strip()
        return int(t[1]) if t.startswith("<") else 1

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
            if callee.startswith(("llvm.fma.", "llvm.fmuladd.")):
                total += lanes(str(inst.type))
    return total
