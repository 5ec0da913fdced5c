# WRONG ANSWER (ods_record): rule 3: a 'memref' value is written AnyMemRef (VALUE_KINDS['memref']). This answer narrows it to the npu's
# element types, MemRefOf<[I8, I32, F32]>, and writes an i1 as I8 (a byte flag): constraints the spec does not
# ask for, which reject ops the spec allows.
from infopt.mlir.ods import ATTRIBUTE_KINDS, VALUE_KINDS, OpSpec

def _value(kind: str) -> str:
    if kind == "memref":
        return "MemRefOf<[I8, I32, F32]>"     # what the npu's SRAMs hold
    if kind == "i1":
        return "I8"                           # flags travel as bytes on the accelerator
    return VALUE_KINDS[kind]


def ods_record(spec: OpSpec) -> str:
    """The ODS `def` of the op `spec` describes."""
    traits = ", [Pure]" if spec.pure else ""
    ins = [f"{_value(k)}:${n}" for n, k in spec.operands] + [f"{ATTRIBUTE_KINDS[k]}:${n}" for n, k in spec.attributes]
    lines = [f'def {spec.record} : Npu_Op<"{spec.mnemonic}"{traits}> {{',
             f'  let summary = "{spec.summary}";',
             f"  let arguments = (ins {', '.join(ins)});"]
    if spec.results:
        lines.append(f"  let results = (outs {', '.join(f'{_value(k)}:${n}' for n, k in spec.results)});")
    if spec.verifier:
        lines.append("  let hasVerifier = 1;")
    return "\n".join(lines) + "\n}\n"
