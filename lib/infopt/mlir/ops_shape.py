"""MLIR emitters of data-movement ops: reshapes as `tensor.collapse_shape` / `tensor.expand_shape`, transposes as
`linalg.transpose`, Identity as an alias."""
from __future__ import annotations

from ..ir.graph import Node
from .emitter import EmitContext, MlirEmitError, register_emitter
from .mlir_text import tensor_type


def reassociation(src: tuple[int, ...], dst: tuple[int, ...]) -> tuple[list[list[int]], list[list[int]]]:
    """Groups of consecutive dims of `src` and of `dst` with equal products, group by group (the finest such)."""
    if not src or not dst:
        raise MlirEmitError(f"reshape between {src} and {dst}: 0-d tensors are not emitted")
    gs, gd = [], []
    i = j = 0
    while i < len(src) and j < len(dst):
        a, b = [i], [j]
        ps, pd = src[i], dst[j]
        i, j = i + 1, j + 1
        while ps != pd:
            if ps < pd and i < len(src):
                a.append(i); ps *= src[i]; i += 1  # noqa: E702
            elif j < len(dst):
                b.append(j); pd *= dst[j]; j += 1  # noqa: E702
            else:
                raise MlirEmitError(f"cannot reshape {src} into {dst}: the sizes differ")
        gs.append(a)
        gd.append(b)
    gs[-1] += list(range(i, len(src)))   # trailing unit dims join the last group
    gd[-1] += list(range(j, len(dst)))
    if any(src[k] != 1 for k in range(i, len(src))) or any(dst[k] != 1 for k in range(j, len(dst))):
        raise MlirEmitError(f"cannot reshape {src} into {dst}: the sizes differ")
    return gs, gd


def reshape(ctx: EmitContext, ssa: str, src: tuple[int, ...], dst: tuple[int, ...], dtype: str) -> str:
    """The value `ssa` of shape `src` as shape `dst`: a collapse to the common groups, then an expand."""
    if src == dst:
        return ssa
    gs, gd = reassociation(src, dst)
    mid = tuple(int(_prod(src[k] for k in g)) for g in gs)
    out = ssa
    if any(len(g) > 1 for g in gs):
        res = ctx.fresh("collapse")
        ctx.line(f"{res} = tensor.collapse_shape {out} {_groups(gs)} : {tensor_type(src, dtype)} into "
                 f"{tensor_type(mid, dtype)}")
        out = res
    if any(len(g) > 1 for g in gd):
        res = ctx.fresh("expand")
        ctx.line(f"{res} = tensor.expand_shape {out} {_groups(gd)} output_shape [{', '.join(map(str, dst))}] : "
                 f"{tensor_type(mid, dtype)} into {tensor_type(dst, dtype)}")
        out = res
    return out


def _prod(values) -> int:
    p = 1
    for v in values:
        p *= v
    return p


def _groups(groups: list[list[int]]) -> str:
    return "[" + ", ".join("[" + ", ".join(map(str, g)) + "]" for g in groups) + "]"


def emit_reshape(ctx: EmitContext, node: Node) -> None:
    """Reshape, Flatten, Squeeze, Unsqueeze: only the static result type matters."""
    src, dst = ctx.type_of(node.inputs[0]), ctx.type_of(node.outputs[0])
    ctx.bind(node.outputs[0], reshape(ctx, ctx.get(node.inputs[0]), src.shape, dst.shape, dst.dtype))


def emit_transpose(ctx: EmitContext, node: Node) -> None:
    """Transpose: `linalg.transpose` with the node's permutation (reversed dims when it has none)."""
    t = ctx.type_of(node.inputs[0])
    perm = [int(p) for p in node.attrs.get("perm", range(t.rank - 1, -1, -1))]
    out_shape = ctx.type_of(node.outputs[0]).shape
    init = ctx.empty(out_shape, {"bool": "i1"}.get(t.dtype, t.dtype))
    res = ctx.fresh("tr")
    ctx.line(f"{res} = linalg.transpose ins({ctx.get(node.inputs[0])} : {ctx.ttype(node.inputs[0])}) outs({init} : "
             f"{tensor_type(out_shape, t.dtype)}) permutation = [{', '.join(map(str, perm))}]")
    ctx.bind(node.outputs[0], res)


def emit_identity(ctx: EmitContext, node: Node) -> None:
    """Identity: the output is the input's SSA value."""
    ctx.bind(node.outputs[0], ctx.get(node.inputs[0]))


def register() -> None:
    """Register this module's emitters."""
    for op in ("Reshape", "Flatten", "Squeeze", "Unsqueeze"):
        register_emitter(op, emit_reshape)
    register_emitter("Transpose", emit_transpose)
    register_emitter("Identity", emit_identity)
