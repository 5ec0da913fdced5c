# WRONG (rule 1: the record is `def <spec.record>`, e.g. def Npu_FillOp). This names the record after the C++
# class, dropping the dialect prefix (def FillOp): the TableGen record is not the one the spec names (other
# records, e.g. a pattern or a doc index, refer to Npu_FillOp), although mlir-tblgen happens to derive the
# same C++ class name from both.
from infopt.mlir.ods import ATTRIBUTE_KINDS, VALUE_KINDS, OpSpec


def ods_record(spec: OpSpec) -> str:
    """The ODS `def` of the op `spec` describes."""
    traits = ", [Pure]" if spec.pure else ""
    args = [f"{VALUE_KINDS[k]}:${n}" for n, k in spec.operands] + [f"{ATTRIBUTE_KINDS[k]}:${n}" for n, k in spec.attributes]
    lines = [f'def {spec.record.split("_", 1)[1]} : Npu_Op<"{spec.mnemonic}"{traits}> {{',
             f'  let summary = "{spec.summary}";',
             f"  let arguments = (ins {', '.join(args)});"]
    if spec.results:
        lines.append(f"  let results = (outs {', '.join(f'{VALUE_KINDS[k]}:${n}' for n, k in spec.results)});")
    if spec.verifier:
        lines.append("  let hasVerifier = 1;")
    return "\n".join(lines) + "\n}\n"
