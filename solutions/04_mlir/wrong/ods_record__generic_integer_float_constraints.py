# WRONG ANSWER (ods_record): rule 3: each operand/result is written with the constraint VALUE_KINDS[kind] names (I1 for i1, F32 for f32).
# This answer writes the type families from memory instead: AnyInteger for i1 and AnyFloat for f32, so the op
# accepts any integer / any float.
from infopt.mlir.ods import ATTRIBUTE_KINDS, VALUE_KINDS, OpSpec

# ODS constraints for each kind of value
_VALUES = {"index": "Index", "i1": "AnyInteger", "f32": "AnyFloat", "memref": "AnyMemRef", "any": "AnyType"}


def ods_record(spec: OpSpec) -> str:
    """The ODS `def` of the op `spec` describes."""
    traits = ", [Pure]" if spec.pure else ""
    ins = [f"{_VALUES[k]}:${n}" for n, k in spec.operands] + [f"{ATTRIBUTE_KINDS[k]}:${n}" for n, k in spec.attributes]
    lines = [f'def {spec.record} : Npu_Op<"{spec.mnemonic}"{traits}> {{',
             f'  let summary = "{spec.summary}";',
             f"  let arguments = (ins {', '.join(ins)});"]
    if spec.results:
        lines.append(f"  let results = (outs {', '.join(f'{_VALUES[k]}:${n}' for n, k in spec.results)});")
    if spec.verifier:
        lines.append("  let hasVerifier = 1;")
    return "\n".join(lines) + "\n}\n"
