# WRONG (rule 2: its summary is spec.summary). Following the habit that a summary is a sentence, this capitalizes
# the first letter ('Fill a region ...' for 'fill a region ...'): the record's summary is not the spec's text.
from infopt.mlir.ods import ATTRIBUTE_KINDS, VALUE_KINDS, OpSpec


def ods_record(spec: OpSpec) -> str:
    """The ODS `def` of the op `spec` describes."""
    traits = ", [Pure]" if spec.pure else ""
    args = [f"{VALUE_KINDS[k]}:${n}" for n, k in spec.operands] + [f"{ATTRIBUTE_KINDS[k]}:${n}" for n, k in spec.attributes]
    lines = [f'def {spec.record} : Npu_Op<"{spec.mnemonic}"{traits}> {{',
             f'  let summary = "{spec.summary[:1].upper() + spec.summary[1:]}";',
             f"  let arguments = (ins {', '.join(args)});"]
    if spec.results:
        lines.append(f"  let results = (outs {', '.join(f'{VALUE_KINDS[k]}:${n}' for n, k in spec.results)});")
    if spec.verifier:
        lines.append("  let hasVerifier = 1;")
    return "\n".join(lines) + "\n}\n"
