# WRONG (rule 1: the record is `def <spec.record>`). The record is written with the dialect's namespace in
# lower case, as in the op's name (def npu_FillOp for Npu_FillOp): not the record the spec names, though
# mlir-tblgen derives the same C++ class (FillOp) from it.
from infopt.mlir.ods import ATTRIBUTE_KINDS, VALUE_KINDS, OpSpec


def ods_record(spec: OpSpec) -> str:
    """The ODS `def` of the op `spec` describes."""
    traits = ", [Pure]" if spec.pure else ""
    args = [f"{VALUE_KINDS[k]}:${n}" for n, k in spec.operands] + [f"{ATTRIBUTE_KINDS[k]}:${n}" for n, k in spec.attributes]
    lines = [f'def npu_{spec.record.split("_", 1)[1]} : Npu_Op<"{spec.mnemonic}"{traits}> {{',
             f'  let summary = "{spec.summary}";',
             f"  let arguments = (ins {', '.join(args)});"]
    if spec.results:
        lines.append(f"  let results = (outs {', '.join(f'{VALUE_KINDS[k]}:${n}' for n, k in spec.results)});")
    if spec.verifier:
        lines.append("  let hasVerifier = 1;")
    return "\n".join(lines) + "\n}\n"
