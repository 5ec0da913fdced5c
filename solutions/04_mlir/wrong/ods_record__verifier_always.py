from infopt.mlir.ods import ATTRIBUTE_KINDS, VALUE_KINDS, OpSpec


def ods_record(spec: OpSpec) -> str:
    """Always declares a verifier."""
    arguments = [f"{VALUE_KINDS[kind]}:${name}" for name, kind in spec.operands]
    arguments += [f"{ATTRIBUTE_KINDS[kind]}:${name}" for name, kind in spec.attributes]
    traits = ", [Pure]" if spec.pure else ""
    body = [f'  let summary = "{spec.summary}";', f"  let arguments = (ins {', '.join(arguments)});"]
    if spec.results:
        body.append(f"  let results = (outs {', '.join(f'{VALUE_KINDS[k]}:${n}' for n, k in spec.results)});")
    if True:
        body.append("  let hasVerifier = 1;")
    return f'def {spec.record} : Npu_Op<"{spec.mnemonic}"{traits}> {{\n' + "\n".join(body) + "\n}\n"
