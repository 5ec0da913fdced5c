def count_macs(ir_text: str) -> int:
    """Static count of float multiply-accumulates (fmul feeding fadd/fsub, llvm.fma, llvm.fmuladd), per lane."""
    import re

    import llvmlite.binding as llvm

    def lanes(t):
        m = re.match(r"\s*<(\d+) x ", t)
        return int(m.group(1)) if m else 1

    llvm.parse_assembly(ir_text)  # make sure it is valid IR
    total = 0
    lines = [ln.strip() for ln in ir_text.splitlines()]
    adds = [ln for ln in lines if re.match(r"%[\w.]+ = fadd|%[\w.]+ = fsub", ln)]
    for ln in lines:
        m = re.match(r"(%[\w.]+) = fmul (?:\w+ )*(<\d+ x \w+>|float|double) ", ln)
        if m and any(m.group(1) in a.split("=", 1)[1] for a in adds):
            total += lanes(m.group(2))
        c = re.match(r"%[\w.]+ = (?:\w+ )*call (?:\w+ )*(<\d+ x \w+>|float|double) @llvm\.(fma|fmuladd)\.", ln)
        if c:
            total += lanes(c.group(1))
    return total
