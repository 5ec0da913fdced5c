# WRONG ANSWER (ods_record): rule 3: an f32 value is written F32 (VALUE_KINDS['f32']). This answer has a typo'd table entry, F64 for f32,
# so the op's f32 operands and results are constrained to 64-bit floats.
from infopt.mlir.ods import ATTRIBUTE_KINDS, VALUE_KINDS, OpSpec

_VALUES = dict(VALUE_KINDS, f32="F64")


def VAL(kind: str) -> str:
    return _VALUES[kind]


def ods_record(spec: OpSpec) -> str:
    """The ODS `def` of the op `spec` describes."""
    traits = ", [Pure]" if spec.pure else ""
    ins = [f"{VAL(k)}:${n}" for n, k in spec.operands] + [f"{ATTRIBUTE_KINDS[k]}:${n}" for n, k in spec.attributes]
    lines = [f'def {spec.record} : Npu_Op<"{spec.mnemonic}"{traits}> {{',
             f'  let summary = "{spec.summary}";',
             f"  let arguments = (ins {', '.join(ins)});"]
    if spec.results:
        lines.append(f"  let results = (outs {', '.join(f'{VAL(k)}:${n}' for n, k in spec.results)});")
    if spec.verifier:
        lines.append("  let hasVerifier = 1;")
    return "\n".join(lines) + "\n}\n"
