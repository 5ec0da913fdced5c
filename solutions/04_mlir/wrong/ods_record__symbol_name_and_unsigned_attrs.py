# WRONG ANSWER (ods_record): rule 3: attributes are written ATTRIBUTE_KINDS[kind] (StrAttr, I64Attr). This answer writes a 'string'
# attribute as SymbolNameAttr and an 'i64' as UI64Attr (an unsigned 64-bit integer), constraints the spec did
# not name.
from infopt.mlir.ods import ATTRIBUTE_KINDS, VALUE_KINDS, OpSpec

_ATTRS = dict(ATTRIBUTE_KINDS, string="SymbolNameAttr", i64="UI64Attr")


def ods_record(spec: OpSpec) -> str:
    """The ODS `def` of the op `spec` describes."""
    traits = ", [Pure]" if spec.pure else ""
    ins = [f"{VALUE_KINDS[k]}:${n}" for n, k in spec.operands] + [f"{_ATTRS[k]}:${n}" for n, k in spec.attributes]
    lines = [f'def {spec.record} : Npu_Op<"{spec.mnemonic}"{traits}> {{',
             f'  let summary = "{spec.summary}";',
             f"  let arguments = (ins {', '.join(ins)});"]
    if spec.results:
        lines.append(f"  let results = (outs {', '.join(f'{VALUE_KINDS[k]}:${n}' for n, k in spec.results)});")
    if spec.verifier:
        lines.append("  let hasVerifier = 1;")
    return "\n".join(lines) + "\n}\n"
