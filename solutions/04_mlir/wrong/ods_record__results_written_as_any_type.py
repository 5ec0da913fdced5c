# WRONG ANSWER (ods_record): rule 3: results are 'written the same way', VALUE_KINDS[kind]. This answer writes every result AnyType (a
# student thinking results need no constraint).
from infopt.mlir.ods import ATTRIBUTE_KINDS, VALUE_KINDS, OpSpec

def ods_record(spec: OpSpec) -> str:
    """The ODS `def` of the op `spec` describes."""
    traits = ", [Pure]" if spec.pure else ""
    ins = [f"{VALUE_KINDS[k]}:${n}" for n, k in spec.operands] + [f"{ATTRIBUTE_KINDS[k]}:${n}"
                                                                   for n, k in spec.attributes]
    lines = [f'def {spec.record} : Npu_Op<"{spec.mnemonic}"{traits}> {{',
             f'  let summary = "{spec.summary}";',
             f"  let arguments = (ins {', '.join(ins)});"]
    if spec.results:
        lines.append(f"  let results = (outs {', '.join(f'AnyType:${n}' for n, k in spec.results)});")
    if spec.verifier:
        lines.append("  let hasVerifier = 1;")
    return "\n".join(lines) + "\n}\n"
