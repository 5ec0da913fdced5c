def count_macs(ir_text: str) -> int:
    """Counts MAC instructions, but a <8 x float> one counts 1 instead of 8."""
    import llvmlite.binding as llvm

    def key(v) -> int:
        return ctypes.cast(v._ptr, ctypes.c_void_p).value

    mod = llvm.parse_assembly(ir_text)
    insts = [i for fn in mod.functions if not fn.is_declaration for bb in fn.blocks for i in bb.instructions]
    fmuls = {key(i) for i in insts if i.opcode == "fmul"}
    counted: set[int] = set()
    total = 0
    for inst in insts:
        if inst.opcode in ("fadd", "fsub"):
            for op in list(inst.operands)[:2]:
                k = key(op)
                if k in fmuls and k not in counted:
                    counted.add(k)
                    total += 1
        elif inst.opcode == "call":
            if list(inst.operands)[-1].name.startswith(("llvm.fma.", "llvm.fmuladd.")):
                total += 1
    return total
