# WRONG (rule 1: the trait Pure when spec.pure). Reasoning that an op without results and without side
# effects would be deleted as dead, this adds Pure only when the spec is pure AND the op has results.
from infopt.mlir.ods import ATTRIBUTE_KINDS, VALUE_KINDS, OpSpec


def ods_record(spec: OpSpec) -> str:
    """The ODS `def` of the op `spec` describes."""
    traits = ", [Pure]" if spec.pure and spec.results else ""
    args = [f"{VALUE_KINDS[k]}:${n}" for n, k in spec.operands] + [f"{ATTRIBUTE_KINDS[k]}:${n}" for n, k in spec.attributes]
    lines = [f'def {spec.record} : Npu_Op<"{spec.mnemonic}"{traits}> {{',
             f'  let summary = "{spec.summary}";',
             f"  let arguments = (ins {', '.join(args)});"]
    if spec.results:
        lines.append(f"  let results = (outs {', '.join(f'{VALUE_KINDS[k]}:${n}' for n, k in spec.results)});")
    if spec.verifier:
        lines.append("  let hasVerifier = 1;")
    return "\n".join(lines) + "\n}\n"
