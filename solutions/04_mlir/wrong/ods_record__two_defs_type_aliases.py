# WRONG (rule 5: the record is ONE def; rule 3: each operand/result written with the constraint VALUE_KINDS
# names). Dialect-style, this first defines an alias per value constraint it uses
# (def Npu_IndexType : TypeAlias<Index>; ...) and writes the operands and results with those aliases: the text
# holds several defs, and the op's constraints are spelled with new names instead of VALUE_KINDS' ones
# (mlir-tblgen resolves the aliases, so the generated C++ and docs look the same).
from infopt.mlir.ods import ATTRIBUTE_KINDS, VALUE_KINDS, OpSpec


def ods_record(spec: OpSpec) -> str:
    """The ODS `def` of the op `spec` describes."""
    used = sorted({k for _, k in (*spec.operands, *spec.results)})
    alias = {k: f"Npu_{k.capitalize()}Type" for k in used}
    head = "".join(f"def {alias[k]} : TypeAlias<{VALUE_KINDS[k]}>;\n" for k in used) + "\n"
    traits = ", [Pure]" if spec.pure else ""
    args = [f"{alias[k]}:${n}" for n, k in spec.operands] + [f"{ATTRIBUTE_KINDS[k]}:${n}" for n, k in spec.attributes]
    lines = [head + f'def {spec.record} : Npu_Op<"{spec.mnemonic}"{traits}> {{',
             f'  let summary = "{spec.summary}";',
             f"  let arguments = (ins {', '.join(args)});"]
    if spec.results:
        lines.append(f"  let results = (outs {', '.join(f'{alias[k]}:${n}' for n, k in spec.results)});")
    if spec.verifier:
        lines.append("  let hasVerifier = 1;")
    return "\n".join(lines) + "\n}\n"
